"""Cross-reading with pypaimon 2.1.0 (spec §2.7, §10): strings/booleans both ways; byte-ordered numeric files read correctly."""
from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest
from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.globalindex.bitmap.bitmap_index_reader import BitmapIndexReader
from pypaimon.globalindex.bitmap.bitmap_index_writer import BitmapIndexWriter
from pypaimon.globalindex.global_index_meta import GlobalIndexIOMeta
from pypaimon.globalindex.key_serializer import create_serializer
from pypaimon.schema.data_types import AtomicType

from index_format import open_index, parse_type, write_index_bytes
from index_format.options import IndexOptions

from .oracle import expected_sets, identity, java_order
from .vectors import load_rows
from tests.data import GLOBAL_INDEX

_VECTORS = GLOBAL_INDEX
_PAIMON_TYPES = {"string": "STRING", "boolean": "BOOLEAN", "int": "INT", "bigint": "BIGINT",
                 "smallint": "SMALLINT", "tinyint": "TINYINT", "double": "DOUBLE", "float": "FLOAT"}


def _pypaimon_write(tmp: Path, type_name: str, rows: list[tuple[int, object]], block_size: int) -> Path:
    ser = create_serializer(AtomicType(_PAIMON_TYPES[type_name]))
    w = BitmapIndexWriter(LocalFileIO(), str(tmp), ser, dictionary_block_size=block_size)
    for rid, value in rows:
        w.write(value, rid)
    entry = w.finish()[0]
    return tmp / entry.file_name


def _pypaimon_reader(path: Path, type_name: str) -> BitmapIndexReader:
    """pypaimon's reader of `path`; it holds the file open until closed."""
    ser = create_serializer(AtomicType(_PAIMON_TYPES[type_name]))
    meta = GlobalIndexIOMeta(path.name, os.path.getsize(path))
    return BitmapIndexReader(ser, LocalFileIO(), str(path.parent), meta)


@pytest.mark.parametrize("name,type_name,block", [
    ("str_mixed", "string", 48), ("str_many", "string", 512), ("boolean", "boolean", 16384)])
def test_pypaimon_reads_our_files_and_we_read_theirs(tmp_path: Path, name: str, type_name: str,
                                                      block: int) -> None:
    rows = load_rows(_VECTORS / "java" / f"{name}.tsv", type_name)
    sets, nulls, non_null, rep = expected_sets(type_name, rows)
    if name == "str_many":
        sample = list(rep.items())[::97]
    else:
        sample = list(rep.items())
    kt = parse_type(type_name)
    data, _ = write_index_bytes([v for _, v in rows], [r for r, _ in rows], kt,
                                IndexOptions(dictionary_block_size=block))
    ours = tmp_path / "ours.index"
    ours.write_bytes(data)
    with closing(_pypaimon_reader(ours, type_name)) as theirs_reader:
        for ident, value in sample:
            assert set(theirs_reader.visit_equal(value).results()) == sets[ident]
        assert set(theirs_reader.visit_is_null().results()) == nulls
        assert set(theirs_reader.visit_is_not_null().results()) == non_null

    theirs = _pypaimon_write(tmp_path, type_name, rows, block)
    r = open_index(str(theirs), kt)
    assert r.key_order == "logical"  # byte order = logical order for these types
    for ident, value in sample:
        assert set(r.eq(value)) == sets[ident]
    assert set(r.null_rows()) == nulls
    assert set(r.non_null_rows()) == non_null
    if type_name == "string":
        for prefix in ("", "a", "key-00", "key-0599", "\x7f", "zz"):
            expect = {rid for rid, v in rows if v is not None and v.encode().startswith(prefix.encode())}
            assert set(r.starts_with(prefix)) == expect, prefix
            assert set(open_index(str(ours), kt).starts_with(prefix)) == expect, prefix


@pytest.mark.parametrize("name,type_name,block", [
    ("int_mixed", "int", 32), ("int_many", "int", 16384), ("int_many", "int", 256),
    ("bigint_hi_rows", "bigint", 24), ("double_special", "double", 16384), ("double_special", "double", 40),
    ("float_special", "float", 16384), ("smallint", "smallint", 24), ("tinyint", "tinyint", 16384)])
def test_we_answer_correctly_on_byte_ordered_files(tmp_path: Path, name: str, type_name: str,
                                                   block: int) -> None:
    rows = load_rows(_VECTORS / "java" / f"{name}.tsv", type_name)
    sets, nulls, non_null, rep = expected_sets(type_name, rows)
    path = _pypaimon_write(tmp_path, type_name, rows, block)
    kt = parse_type(type_name)
    r = open_index(str(path), kt)
    assert r.key_order in ("bytes", "unknown")
    got = {identity(type_name, v): set(r.bitmap_at(o, n)) for v, o, n in r.located_entries()}
    assert got == sets
    for ident, value in rep.items():
        assert set(r.eq(value)) == sets[ident], value
    assert set(r.isin(list(rep.values())[:10])) == set().union(*[sets[identity(type_name, v)]
                                                                  for v in list(rep.values())[:10]])
    assert set(r.null_rows()) == nulls
    ordered = sorted(rep.values(), key=lambda v: java_order(type_name, v))
    mid = ordered[len(ordered) // 2]
    expect = {rid for rid, v in rows if v is not None and java_order(type_name, v) > java_order(type_name, mid)}
    assert set(r.range(mid, None, low_inclusive=False)) == expect
    counts = [c for _, c in r.value_counts()]
    assert counts == [len(sets[identity(type_name, v)]) for v in ordered]
    missing = {"int": 123456789, "bigint": -5, "double": 0.123, "float": 0.25, "smallint": 999,
               "tinyint": 99}[type_name]
    if identity(type_name, missing) not in sets:
        assert set(r.eq(missing)) == set()


@pytest.mark.parametrize("name,type_name,block", [
    ("int_mixed", "int", 32), ("int_many", "int", 16384), ("int_many", "int", 256),
    ("bigint_hi_rows", "bigint", 24), ("bigint_hi_rows", "bigint", 16384)])
def test_pypaimon_searches_our_byte_ordered_files(tmp_path: Path, name: str, type_name: str, block: int) -> None:
    """bgix.key-order=bytes (spec §2.7): pypaimon 2.1.0's binary searches answer eq and IN exactly."""
    rows = load_rows(_VECTORS / "java" / f"{name}.tsv", type_name)
    sets, nulls, non_null, rep = expected_sets(type_name, rows)
    kt = parse_type(type_name)
    data, _ = write_index_bytes([v for _, v in rows], [r for r, _ in rows], kt,
                                IndexOptions(dictionary_block_size=block, key_order="bytes"))
    ours = tmp_path / "ours.index"
    ours.write_bytes(data)
    assert open_index(str(ours), kt).key_order in ("bytes", "unknown")
    with closing(_pypaimon_reader(ours, type_name)) as theirs_reader:
        values = list(rep.values())
        sample = values if len(values) <= 400 else values[::7]
        for value in sample:
            assert set(theirs_reader.visit_equal(value).results()) == sets[identity(type_name, value)], value
        missing = {"int": 123456789, "bigint": -5}[type_name]
        if identity(type_name, missing) not in sets:
            assert set(theirs_reader.visit_equal(missing).results()) == set()
        for i in range(0, len(sample), 5):
            chunk = sample[i:i + 5] + [missing]
            expect = set().union(*(sets.get(identity(type_name, v), set()) for v in chunk))
            assert set(theirs_reader.visit_in(chunk).results()) == expect
        assert set(theirs_reader.visit_is_null().results()) == nulls
        assert set(theirs_reader.visit_is_not_null().results()) == non_null
