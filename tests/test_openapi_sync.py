"""The committed openapi/openapi.json equals what the app generates (regenerate with
`python -m service.api.app --export-openapi openapi/openapi.json`)."""
from __future__ import annotations

import json
from pathlib import Path

from service.api.app import openapi_document

REPO = Path(__file__).resolve().parents[1]


def test_committed_openapi_is_current() -> None:
    committed = json.loads((REPO / "openapi" / "openapi.json").read_text())
    generated = json.loads(json.dumps(openapi_document()))
    assert committed == generated, (
        "openapi/openapi.json is stale; run: python -m service.api.app --export-openapi openapi/openapi.json")


def test_operation_ids_are_stable_and_unique() -> None:
    doc = openapi_document()
    ids = [op["operationId"] for path in doc["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    assert "query-query" in ids and "indexes-create_global_index" in ids and "jobs-get_job" in ids
