"""GET /v1/index-families: the families bgix serves, as index_format.families declares them (the dashboard's
hints and build choices come from here, not from a copy in its script)."""
from __future__ import annotations

from pathlib import Path

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings


def test_index_families_are_served_from_the_family_table(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.get("/v1/index-families")
    assert r.status_code == 200, r.text
    families = {f["name"]: f for f in r.json()["families"]}
    assert list(families) == ["bitmap", "btree", "multivalue", "fm"]
    assert all(f["description"] for f in families.values())
    assert [n for n, f in families.items() if f["builds"]] == ["bitmap", "btree", "multivalue", "fm"]
    assert families["bitmap"]["answers"] is None   # every operator
    assert {"eq", "between", "starts_with", "not_in"} <= set(families["btree"]["answers"])
    assert "ends_with" not in families["btree"]["answers"] and "contains" not in families["btree"]["answers"]
    assert families["multivalue"]["answers"] == ["array_contains", "array_contains_all", "arrays_overlap"]
    assert {"contains", "like", "ends_with", "starts_with", "eq", "is_null"} <= set(families["fm"]["answers"])
    assert families["fm"]["key_types"] == ["string"]   # the dashboard offers STRING fields only
    assert all(families[n]["key_types"] is None for n in ("bitmap", "btree", "multivalue"))


def test_index_families_need_the_token_when_reads_do(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, token="s3cret", read_token_required=True)
    with TestClient(create_app(settings)) as client:
        assert client.get("/v1/index-families").status_code == 401
        ok = client.get("/v1/index-families", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and len(ok.json()["families"]) == 4
