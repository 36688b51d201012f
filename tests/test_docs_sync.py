"""Docs cannot drift: every service setting and every index option is in docs/configuration.md."""
from __future__ import annotations

from pathlib import Path

from index_format.options import OPTION_TABLE
from service.api.settings import Settings

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
