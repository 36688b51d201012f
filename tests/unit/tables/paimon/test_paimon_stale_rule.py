"""stale_index's rule: which index files a data-evolution update made stale.

On tables pypaimon makes, updates (its update_by_arrow_with_row_id) and indexes (its create_global_index, no DEIX
marker), the stale files must be exactly those whose row range meets an update file of the indexed column, judged
from pypaimon's own scan plan and index listing. The sequence-number rules (DEIX baseline, per-column sequences)
are checked on hand-made file records, as Paimon Java's DataEvolutionGlobalIndexRefreshPlanner decides them.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pypaimon.globalindex.create_global_index import create_global_index
from pypaimon.index.index_file_handler import IndexFileHandler

from index_format.global_index.filemeta import deix_source_meta
from service.tables.paimon.description import PaimonDataFile, RowRangeGroup, describe_table
from service.tables.paimon.index_entries import GlobalIndexEntry, list_all_index_entries
from service.tables.paimon.stale_index import field_ids_loader, stale_index_files
from service.tables.paimon.table import open_paimon_table
from tests.unit.tables.paimon.paimon_tables import FULL_OPTIONS, create_table, pypaimon_table, update_rows

IGNORE = {**FULL_OPTIONS, "global-index.column-update-action": "IGNORE"}


def _stale(location: Path) -> set[str]:
    table = open_paimon_table(str(location))
    return set(stale_index_files(describe_table(table), list_all_index_entries(table), field_ids_loader(table)))


def _expected(location: Path, column: str) -> set[str]:
    """pypaimon's view: index files on `column` whose row range meets a data file that wrote `column` alone."""
    table = pypaimon_table(location)
    rb = table.new_read_builder()
    updates = [(f.first_row_id, f.first_row_id + f.row_count - 1) for s in rb.new_scan().plan().splits()
               for f in s.files if f.write_cols == [column]]
    fid = next(f.id for f in table.fields if f.name == column)
    return {e.index_file.file_name for e in IndexFileHandler(table=table).scan(None)
            if e.index_file.global_index_meta is not None and e.index_file.global_index_meta.index_field_id == fid
            and any(e.index_file.global_index_meta.row_range_start <= b
                    and a <= e.index_file.global_index_meta.row_range_end for a, b in updates)}


def test_pypaimon_indexes_go_stale_exactly_where_their_column_was_updated(tmp_path: Path) -> None:
    location = create_table(tmp_path / "wh", "events", options=IGNORE, commits=3, rows=300)
    for column in ("status", "code"):
        assert create_global_index(pypaimon_table(location), column, index_type="bitmap") > 0
    assert _stale(location) == set()
    update_rows(location, "flag", [1, 500], [True, False])         # no index on flag
    assert _stale(location) == set()
    update_rows(location, "status", [3, 650], ["x", "y"])
    stale = _stale(location)
    assert stale and stale == _expected(location, "status")       # code's files untouched
    update_rows(location, "code", [4], [1])
    assert _stale(location) == _expected(location, "status") | _expected(location, "code")


def test_an_update_before_a_build_without_marker_counts_as_stale(tmp_path: Path) -> None:
    """No DEIX marker: the build's scan is only known to be at or after the commit of its rows (documented)."""
    location = create_table(tmp_path / "wh", "events", options=IGNORE, commits=2, rows=300)
    update_rows(location, "status", [3], ["x"])
    assert create_global_index(pypaimon_table(location), "status", index_type="bitmap") > 0
    assert _stale(location) == _expected(location, "status") != set()


def _file(name: str, first: int, rows: int, seq: int, write_cols: tuple[str, ...] | None = None,
          seqs: tuple[int, ...] | None = None) -> PaimonDataFile:
    return PaimonDataFile(path=f"/t/{name}", file_name=name, partition={}, bucket=0, first_row_id=first,
                          row_count=rows, write_cols=write_cols, max_sequence_number=seq,
                          write_cols_sequences=seqs)


def _entry(name: str, start: int, end: int, scanned: int | None, field_id: int = 1) -> GlobalIndexEntry:
    return GlobalIndexEntry(
        column="s", index_type="bitmap", index_field_id=field_id, key_type=None, path=f"/t/index/{name}",
        file_name=name, external_path=None, file_size=1, row_count=end - start + 1, partition={}, bucket=0,
        row_range_start=start, row_range_end=end, index_meta=b"",
        source_meta=None if scanned is None else deix_source_meta(scanned), extra_field_ids=None)


def _run(files: list[PaimonDataFile], entries: list[GlobalIndexEntry]) -> dict[str, Any]:
    files.sort(key=lambda f: f.first_row_id)
    groups: list[list[PaimonDataFile]] = []
    for f in files:
        if groups and f.first_row_id <= max(g.last_row_id for g in groups[-1]):
            groups[-1].append(f)
        else:
            groups.append([f])
    desc = SimpleNamespace(row_ranges=tuple(
        RowRangeGroup(min(f.first_row_id for f in g), max(f.last_row_id for f in g), {}, tuple(g)) for g in groups))
    names = {"n": 0, "s": 1, "m": 2}

    def ids(f: PaimonDataFile) -> tuple[int, ...]:
        return tuple(names.values()) if f.write_cols is None else tuple(names[c] for c in f.write_cols)
    stale = stale_index_files(desc, {("s", "bitmap"): entries}, ids)  # type: ignore[arg-type]
    return {k: (v.data_file, v.data_sequence, v.baseline, v.marked) for k, v in stale.items()}


def test_deix_baseline_and_column_sequences_as_paimon_java_decides() -> None:
    base = [_file("a", 0, 100, 1), _file("b", 100, 100, 2)]
    # an update of s committed at snapshot 5: stale for a build that scanned 4, fresh for one that scanned 5
    upd = _file("u", 0, 100, 5, ("s",))
    assert _run([*base, upd], [_entry("i4", 0, 199, 4)]) == {"i4": ("/t/u", 5, 4, True)}
    assert _run([*base, upd], [_entry("i5", 0, 199, 5)]) == {}
    # only entries whose range meets the update's rows
    assert set(_run([*base, upd], [_entry("lo", 0, 99, 4), _entry("hi", 100, 199, 4)])) == {"lo"}
    # a file writing n and s with per-column sequences: s's own sequence decides
    both = _file("w", 100, 100, 9, ("n", "s"), (9, 3))
    assert _run([*base, both], [_entry("i", 100, 199, 4)]) == {}
    assert _run([*base, _file("w", 100, 100, 9, ("n", "s"), (3, 9))], [_entry("i", 100, 199, 4)]) == {
        "i": ("/t/w", 9, 4, True)}
    # sequences not recorded for every written column: the file's max sequence counts
    assert set(_run([*base, _file("w", 100, 100, 9, ("n", "s"), (3,))], [_entry("i", 100, 199, 4)])) == {"i"}
    # an update of another column never makes the index stale
    assert _run([*base, _file("u", 0, 100, 5, ("n",))], [_entry("i", 0, 199, 4)]) == {}


def test_no_marker_baseline_is_the_newest_commit_that_brought_the_rows() -> None:
    base = [_file("a", 0, 100, 1), _file("b", 100, 100, 3)]
    # rows 100..199 came at snapshot 3: an index over 0..199 was built at or after it
    assert _run([*base, _file("u", 0, 100, 2, ("s",))], [_entry("i", 0, 199, None)]) == {}
    assert _run([*base, _file("u", 0, 100, 4, ("s",))], [_entry("i", 0, 199, None)]) == {
        "i": ("/t/u", 4, 3, False)}
    # an index over 0..99 alone only knows snapshot 1: the update at 2 may be newer
    assert set(_run([*base, _file("u", 0, 100, 2, ("s",))], [_entry("i", 0, 99, None)])) == {"i"}
