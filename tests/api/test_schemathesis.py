"""Property-based API fuzzing with schemathesis against the app's own OpenAPI document (bounded examples):
no server error and no response that violates the documented schema, status codes or content types."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job, write_table
from tests.api.predicates import make_frame

REPO = Path(__file__).resolve().parents[2]
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance]


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    write_table(root / "data" / "events", make_frame(np.random.default_rng(11), 200), 1)
    app = create_app(make_settings(root))
    with TestClient(app) as client:
        client.put("/v1/tables/events", json={"location": str(root / "data" / "events")})
        job = client.post("/v1/create_global_index", json={"table": "events", "index_column": "status"}).json()
        assert wait_job(client, job["job_id"])["state"] == "succeeded"
        yield app


@pytest.fixture(scope="module")
def api_schema(fuzz_app):
    return schemathesis.openapi.from_asgi("/openapi.json", fuzz_app)


def _labels() -> list[str]:
    # Operation labels from the committed document, so each operation is its own test case.
    doc = json.loads((REPO / "openapi" / "openapi.json").read_text())
    return [f"{method.upper()} {path}" for path, ops in doc["paths"].items() for method in ops]


# schemathesis' pytest plugin (from_fixture/parametrize) does not load under pytest 9, so each operation's
# hypothesis strategy is driven directly with a bounded number of examples.
@pytest.mark.parametrize("label", _labels())
def test_api_conforms_to_its_openapi(api_schema, label: str) -> None:
    operation = api_schema.find_operation_by_label(label)
    assert operation is not None, label

    @given(case=operation.as_strategy())
    @settings(max_examples=20, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case) -> None:
        case.call_and_validate(checks=CHECKS)

    run()
