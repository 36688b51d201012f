"""BGIX_AGGREGATE_MAX_GROUPS: the groups cap of one aggregate, read from the environment into the query service
(the 400 too_many_groups it sets is tested in tests/api/test_aggregate.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from service.api.app import build_services
from service.server.settings import Settings


def test_the_groups_cap_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BGIX_AGGREGATE_MAX_GROUPS", "7")
    settings = Settings(warehouse=str(tmp_path))
    assert settings.aggregate_max_groups == 7
    assert build_services(settings).query_service.max_groups == 7
    monkeypatch.setenv("BGIX_AGGREGATE_MAX_GROUPS", "0")
    with pytest.raises(ValidationError, match="aggregate_max_groups"):
        Settings(warehouse=str(tmp_path))
