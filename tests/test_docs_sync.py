"""Docs cannot drift: every service setting and every index option is in docs/configuration.md."""
from __future__ import annotations

from pathlib import Path

from index_format.options import OPTION_TABLE
from service.server.settings import Settings

CONFIG_DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_every_setting_is_documented() -> None:
    text = CONFIG_DOC.read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(" `"): line for line in text.splitlines() if line.startswith("| `BGIX_")}
    names = {f"BGIX_{name.upper()}" for name in Settings.model_fields}
    assert names - set(rows) == set(), "settings missing from docs/configuration.md"
    assert set(rows) - names == set(), "docs/configuration.md names settings that do not exist"


def test_every_index_option_is_documented() -> None:
    text = CONFIG_DOC.read_text(encoding="utf-8")
    missing = [spec.key for spec in OPTION_TABLE if f"`{spec.key}`" not in text]
    assert missing == []


ERRORS_DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"


def test_every_error_code_is_documented_with_its_one_status() -> None:
    from service.api.error_codes import ERROR_TABLE

    text = ERRORS_DOC.read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip(" `") for c in line.split("|")[1:-1]]
        if len(cells) == 3 and cells[0].isdigit():
            rows[cells[1]] = int(cells[0])
    table = {code: status for _, status, code in ERROR_TABLE}
    # Codes the handlers give outside the table (schema, routing, body limit, last resort).
    table.update({"invalid_request": 422, "method_not_allowed": 405, "body_too_large": 413, "internal": 500})
    statuses: dict[str, set[int]] = {}
    for _, status, code in ERROR_TABLE:
        statuses.setdefault(code, set()).add(status)
    assert {c: s for c, s in statuses.items() if len(s) > 1} == {}, "a code with two statuses"
    assert {c: s for c, s in table.items() if rows.get(c) != s} == {}, "docs/errors.md disagrees"
