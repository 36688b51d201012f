"""Writer: block cutting (spec §2.8), input forms, rotation across files (spec §5.2), input errors.

Expected values come from plain Python sets over the input and from a spec-level parse in the test.
"""
from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap64

from index_format import open_index, parse_meta, parse_type
from index_format.errors import InvalidOptionError
from index_format.options import IndexOptions
from index_format.global_index.writer import WriterInputError, manifest_meta, write_index_bytes, write_index_files
from index_format.storage import Storage
from tests.unit.index_format.global_index.index_sets import read_sets as _read_all, truth as _truth


@pytest.mark.parametrize("block_size", [1, 24, 100, 16384])
def test_blocks_respect_the_size_rule(block_size: int) -> None:
    keys = [f"k{i:05d}" * (1 + i % 3) for i in range(300)]
    data, written = write_index_bytes(keys, list(range(300)), parse_type("string"),
                                      IndexOptions(dictionary_block_size=block_size))
    from index_format.storage import BytesSource
    r = open_index(BytesSource(data), parse_type("string"))
    blocks = r.block_info()
    for i, (_, _, length) in enumerate(blocks):
        n_entries = len(r.blocks.block(i))
        # spec §2.8: an uncompressed body exceeds the limit only when it holds a single entry
        assert length <= block_size or n_entries == 1
    assert written.value_count == 300 == sum(len(r.blocks.block(i)) for i in range(len(blocks)))


def test_input_forms_agree() -> None:
    rng = random.Random(7)
    keys = [rng.choice([None, -3, 0, 7, 1 << 40]) for _ in range(500)]
    rids = list(range(500))
    rng.shuffle(rids)
    base, _ = write_index_bytes(keys, rids, parse_type("bigint"))
    arr = pa.array(keys, pa.int64())
    assert write_index_bytes(arr, np.array(rids), parse_type("bigint"))[0] == base
    chunked = pa.chunked_array([arr[:100], arr[100:]])
    assert write_index_bytes(chunked, pa.array(rids), parse_type("bigint"))[0] == base
    sets, nulls = _truth(keys, rids)
    assert _read_all(base, "bigint") == (sets, nulls)


def test_large_and_unsorted_row_ids() -> None:
    rids = [5, (1 << 33) + 1, 3, (1 << 40), 1, 0, (1 << 62)]
    keys = ["a", "b", "a", None, "b", "a", None]
    data, written = write_index_bytes(keys, rids, parse_type("string"))
    assert _read_all(data, "string") == _truth(keys, rids)
    assert written.has_nulls and (written.first_key, written.last_key) == ("a", "b")


def test_duplicate_pairs_count_rows_but_store_once() -> None:
    data, written = write_index_bytes([1, 1, 1], [4, 4, 5], parse_type("int"))
    assert written.row_count == 3
    assert _read_all(data, "int") == ({1: {4, 5}}, set())


def test_all_null_and_empty() -> None:
    data, written = write_index_bytes([None] * 5, range(5), parse_type("string"))
    assert written.meta.hex() == "0000000000000000010103"  # spec §12.3
    assert len(data) == 89
    assert parse_meta(parse_type("string"), written.meta).only_nulls
    data, written = write_index_bytes([], [], parse_type("int"))
    assert written.row_count == 0 and written.value_count == 0


def test_input_errors() -> None:
    kt = parse_type("int")
    with pytest.raises(WriterInputError):
        write_index_bytes([1, 2], [0], kt)
    with pytest.raises(WriterInputError):
        write_index_bytes([1], [-1], kt)
    with pytest.raises(WriterInputError):
        write_index_bytes([1], np.array([1 << 63], dtype=np.uint64), kt)
    with pytest.raises(InvalidOptionError):
        write_index_bytes([1], [0], kt, IndexOptions(compression="lzo"))


def test_rotation_like_pypaimon(tmp_path: Path) -> None:
    # spec §5.2: R = 3 → chunks of int(3 × 1.2) = 3 records; nulls first; one key may span two files
    keys = ["b", None, "a", "b", None, "b", "c", None, "a", "b"]
    rids = list(range(10))
    names = iter(range(100))
    files = write_index_files(keys, rids, parse_type("string"), IndexOptions(records_per_range=3),
                              records_per_file=3, new_path=lambda: str(tmp_path / f"f{next(names)}.index"),
                              storage=Storage(str(tmp_path)))
    assert [f.row_count for f in files] == [3, 3, 3, 1]
    first = parse_meta(parse_type("string"), files[0].meta)
    assert first.only_nulls and first.has_nulls
    union: dict = {}
    seen_rows: list[int] = []
    for f in files:
        assert Path(f.path).stat().st_size == f.file_size
        r = open_index(f.path, parse_type("string"))
        for v, o, n in r.located_entries():
            union.setdefault(v, set()).update(r.bitmap_at(o, n))
        seen_rows += list(r.null_rows()) + list(r.non_null_rows())
    assert sorted(seen_rows) == rids
    assert union == _truth(keys, rids)[0]
    # files cover consecutive key intervals
    bounds = [(f.first_key, f.last_key) for f in files[1:]]
    assert bounds == sorted(bounds)


def test_manifest_meta_examples() -> None:
    # spec §4 examples
    kt = parse_type("string")
    assert manifest_meta(kt, "even", "odd", False).hex() == "040000006576656e030000006f6464000100"
    assert manifest_meta(kt, "", "😀", True).hex() == "0000000004000000f09f9880010100"


def test_bitmaps_are_run_optimized() -> None:
    data, _ = write_index_bytes(["x"] * 1000, range(1000), parse_type("string"))
    footer = struct.unpack(">qiqiqiiii", data[-48:])
    nn = data[footer[2]:footer[2] + footer[3]]
    expected = BitMap64(range(1000))
    expected.run_optimize()
    assert nn == expected.serialize()


def test_vectorized_bitmaps_equal_bitmap64_run_optimized() -> None:
    # the numpy serializer must give BitMap64.run_optimize() bytes (= Java's, spec §1) for every shape
    from index_format.bitmaps import serialize_groups as _bitmaps
    rng = np.random.default_rng(3)
    for _ in range(150):
        groups = []
        for _ in range(int(rng.integers(1, 6))):
            kind = int(rng.integers(0, 6))
            if kind == 0:
                ids = np.array([rng.integers(0, 1 << 20)])
            elif kind == 1:
                a = int(rng.integers(0, 1 << 20))
                ids = np.arange(a, a + int(rng.integers(1, 9)))
            elif kind == 2:
                ids = np.unique(rng.integers(0, 200, int(rng.integers(1, 40)))) + (int(rng.integers(0, 16)) << 16)
            elif kind == 3:
                ids = np.concatenate([np.arange(5, 12), np.arange(20, 23), [40], np.arange(50, 55)])
            elif kind == 4:
                ids = np.unique(rng.integers(0, 1 << 18, int(rng.integers(1, 6000))))
            else:
                ids = np.unique(rng.integers(0, 1 << 34, int(rng.integers(1, 50))))
            groups.append(np.sort(ids).astype(np.int64))
        rid = np.concatenate(groups)
        bounds = np.concatenate([[0], np.cumsum([len(g) for g in groups])])
        buf, offs = _bitmaps(rid, bounds)
        for i, g in enumerate(groups):
            expected = BitMap64(g.tolist())
            expected.run_optimize()
            assert buf[offs[i]:offs[i + 1]] == expected.serialize(), g[:10]


def test_vectorized_bitmaps_multi_container_shapes() -> None:
    from index_format.bitmaps import serialize_groups as _bitmaps
    rng = np.random.default_rng(5)
    for _ in range(120):
        groups = []
        for _ in range(int(rng.integers(1, 5))):
            parts = []
            for c in rng.choice(40, size=int(rng.integers(1, 20)), replace=False):
                base = int(c) << 16
                k = int(rng.integers(0, 5))
                if k == 0:
                    parts.append(base + np.arange(int(rng.integers(0, 100)), int(rng.integers(100, 300))))
                elif k == 1:
                    parts.append(base + rng.integers(0, 65536, int(rng.integers(1, 30))))
                elif k == 2:
                    parts.append(base + np.array([5, 6, 7]))
                elif k == 3:
                    parts.append(base + np.array([1, 2, 3, 4, 9]))
                else:
                    parts.append(base + np.arange(0, 5000, 1 + int(rng.integers(0, 2))))
            ids = np.unique(np.concatenate(parts))
            if rng.random() < 0.05:
                ids = np.append(ids, (1 << 33) + 5)
            groups.append(ids.astype(np.int64))
        rid = np.concatenate(groups)
        bounds = np.concatenate([[0], np.cumsum([len(g) for g in groups])])
        buf, offs = _bitmaps(rid, bounds)
        for i, g in enumerate(groups):
            expected = BitMap64(g.tolist())
            expected.run_optimize()
            assert buf[offs[i]:offs[i + 1]] == expected.serialize()


def _spec_writer(sorted_pairs: list[tuple[bytes, list[int]]], nulls: list[int], block_size: int) -> bytes:
    """A literal, per-entry transcription of spec §2.8/§2.9 (uncompressed), used as an oracle."""
    import zlib

    def vint(n: int) -> bytes:
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    def bm(ids: list[int]) -> bytes:
        b = BitMap64(ids)
        b.run_optimize()
        return b.serialize()

    def trailed(body: bytes) -> bytes:
        return body + b"\x00" + struct.pack("<I", zlib.crc32(body + b"\x00"))

    out = bytearray()
    block: list[bytes] = []
    block_first = b""
    index: list[bytes] = []

    def finish() -> None:
        body = vint(len(block)) + b"".join(block)
        index.append(vint(len(block_first)) + block_first + vint(len(out)) + vint(len(body)))
        out.extend(trailed(body))

    for key, ids in sorted_pairs:
        offset = len(out)
        data = bm(ids)
        out.extend(data)
        entry = vint(len(key)) + key + vint(offset) + vint(len(data))
        if block and len(vint(len(block) + 1)) + sum(map(len, block)) + len(entry) > block_size:
            finish()
            block = []
        if not block:
            block_first = key
        block.append(entry)
    if block:
        finish()
    null_bytes, nn_bytes = bm(sorted(nulls)), bm(sorted(i for _, ids in sorted_pairs for i in ids))
    null_off = len(out)
    out.extend(null_bytes)
    out.extend(nn_bytes)
    index_off = len(out)
    index_body = vint(len(index)) + b"".join(index)
    out.extend(trailed(index_body))
    out.extend(struct.pack(">qiqiqiiii", null_off, len(null_bytes), null_off + len(null_bytes), len(nn_bytes),
                           index_off, len(index_body), len(sorted_pairs), 1, 0x42474958))
    return bytes(out)


@pytest.mark.parametrize("block_size", [1, 7, 24, 50, 200, 16384])
def test_matches_literal_spec_writer(block_size: int) -> None:
    rng = random.Random(block_size)
    for trial in range(4):
        n = rng.choice([1, 5, 60, 400])
        words = [rng.choice(["", "a", "ab", "é", "😀", "x" * rng.randint(1, 300)]) + str(rng.randint(0, 50))
                 for _ in range(n)]
        keys = [None if rng.random() < 0.1 else w for w in words]
        rids = rng.sample(range(1 << 34 if trial == 3 else 5000), n)
        data, _ = write_index_bytes(keys, rids, parse_type("string"),
                                    IndexOptions(dictionary_block_size=block_size))
        groups: dict[bytes, list[int]] = {}
        for k, r in zip(keys, rids):
            if k is not None:
                groups.setdefault(k.encode(), []).append(r)
        pairs = [(k, sorted(v)) for k, v in sorted(groups.items())]
        assert data == _spec_writer(pairs, [r for k, r in zip(keys, rids) if k is None], block_size)


def test_rotation_through_storage(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    keys = [i % 7 for i in range(100)]
    names = iter(range(100))
    files = write_index_files(keys, list(range(100)), parse_type("int"), records_per_file=30,
                              new_path=lambda: f"idx/f{next(names)}.index", storage=storage)
    assert [f.row_count for f in files] == [30, 30, 30, 10]
    got: dict = {}
    for f in files:
        r = open_index(f.path, parse_type("int"), storage=storage, size=f.file_size)
        for v, o, n in r.located_entries():
            got.setdefault(v, set()).update(r.bitmap_at(o, n))
    assert got == _truth(keys, list(range(100)))[0]


@pytest.mark.parametrize("type_text,values", [
    ("tinyint", [-128, 127, 0, -1, 5]),
    ("smallint", [-32768, 32767, 256, -1]),
    ("decimal(10,2)", ["1.50", "-2.25", "0.00", "99999999.99"]),
    ("decimal(30,4)", ["1.5000", "-12345678901234567890.1234", "0", "7"]),
    ("date", ["1969-12-31", "1970-01-01", "2024-02-29", "1900-01-01"]),
    ("time(3)", ["00:00:00", "23:59:59.999", "12:00:00.5"]),
    ("timestamp(3)", ["1969-12-31T23:59:59.999", "1970-01-01T00:00:00", "2024-01-01T10:00:00.123"]),
    ("timestamp(6)", ["1969-12-31T23:59:59.999999", "1970-01-01T00:00:00.000001", "2024-01-01T10:00:00"]),
    ("timestamp_ltz(6)", ["2024-01-01T10:00:00+00:00", "1960-06-01T00:00:00.5+00:00"]),
])
def test_every_type_round_trips_in_natural_order(type_text: str, values: list) -> None:
    import datetime as dt
    import decimal
    kt = parse_type(type_text)

    def native(text: object) -> object:  # independent parsing with the standard library
        if kt.name == "decimal":
            return decimal.Decimal(str(text)).quantize(decimal.Decimal(1).scaleb(-kt.decimal_scale))
        if kt.name == "date":
            return dt.date.fromisoformat(str(text))
        if kt.name == "time":
            return dt.time.fromisoformat(str(text))
        if kt.name in ("timestamp", "timestamp_ltz"):
            return dt.datetime.fromisoformat(str(text))
        return text

    rng = random.Random(1)
    vals = [native(v) for v in values]
    keys = [rng.choice(vals + [None]) for _ in range(200)]
    rids = list(range(200))
    data, written = write_index_bytes(keys, rids, kt)
    from index_format.storage import BytesSource
    r = open_index(BytesSource(data), kt)
    entries = [v for v, _, _ in r.located_entries()]
    present = sorted({k for k in keys if k is not None})
    assert entries == present
    for v in present:
        assert set(r.eq(v)) == {i for i, k in zip(rids, keys) if k == v}
    assert (written.first_key, written.last_key) == (present[0], present[-1])
    assert set(r.null_rows()) == {i for i, k in zip(rids, keys) if k is None}
