"""Doc lines that state what bgix (or an upstream writer) does cannot go stale unnoticed: claims retired by a change
may not come back in any doc, and the rows that replaced them must name what makes them true."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from index_format.options import OPTION_TABLE

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])

# (what a doc may no longer say, why it is false now)
RETIRED = [
    (re.compile(r"(does not|doesn't|never) (yet )?(take|apply|use|read)s? deletion vectors|deletion vectors are "
                r"(ignored|not applied)", re.I),
     "the service applies Paimon deletion vectors (service/tables/paimon/deletions.py deleted_row_ids)"),
    (re.compile(r"Java writes (none|no (btree )?bloom)|\| Writes a bloom filter \| never", re.I),
     "Paimon Java writes btree bloom filters with btree-index.bloom-filter.enabled since apache/paimon#9946"),
]


def _table_row(doc: Path, first_cell: str) -> str:
    rows = [line for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith(f"| {first_cell} |")]
    assert len(rows) == 1, f"{doc.name}: expected one table row '| {first_cell} |', found {len(rows)}"
    return rows[0]


@pytest.mark.parametrize(("pattern", "why"), RETIRED, ids=["deletion-vectors", "java-btree-bloom"])
def test_no_doc_repeats_a_retired_claim(pattern: re.Pattern[str], why: str) -> None:
    found = [f"{doc.relative_to(REPO)}:{n}" for doc in DOCS
             for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == [], f"stale doc lines ({why}): {found}"


def test_format_notes_name_where_the_service_applies_deletion_vectors() -> None:
    from service.tables.paimon import deletions, view

    row = _table_row(REPO / "docs" / "format-notes.md", "Deletion vectors")
    assert "service/tables/paimon/deletions.py" in row and "`deleted_row_ids`" in row, row
    # what the row names is what a Paimon view takes its deleted rows from
    assert callable(deletions.deleted_row_ids)
    assert "deleted_row_ids(" in inspect.getsource(view.load_paimon_view)


def test_btree_bloom_filter_docs_say_which_writers_write_one() -> None:
    option = "btree-index.bloom-filter.enabled"
    assert option in {spec.key for spec in OPTION_TABLE}
    row = _table_row(REPO / "docs" / "configuration.md", f"`{option}`")
    assert "Paimon Java" in row and "apache/paimon#9946" in row, row
    java = _table_row(REPO / "docs" / "format-notes.md", "Writes a bloom filter").split("|")[2]
    assert f"`{option}`" in java and "apache/paimon#9946" in java, java
