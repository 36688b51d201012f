"""Option `bgix.key-order=bytes` (spec §2.7): numeric keys in serialized-byte order, as pypaimon 2.1.0 writes them.

Ground truth is independent of the writer: a minimal file parser written here from the spec (§2.2, §2.4–§2.6),
keys serialized here with `struct`, and plain-Python oracles in Java logical order.
"""
from __future__ import annotations

import datetime as dt
import math
import random
import struct
from pathlib import Path

import pytest

from index_format import open_index, parse_meta, parse_type
from index_format.errors import InvalidOptionError
from index_format.global_index.writer import write_index_bytes, write_index_files
from index_format.options import IndexOptions, parse_options
from index_format.storage import BytesSource, Storage

_EPOCH = dt.date(1970, 1, 1)
_FMT = {"tinyint": "<b", "smallint": "<h", "int": "<i", "bigint": "<q", "date": "<i", "float": "<f",
        "double": "<d"}


def _ser(type_name: str, v: object) -> bytes:
    """spec §3 keys, little-endian; one canonical NaN (struct packs Java's 0x7fc00000 / 0x7ff8…)."""
    if type_name == "date":
        return struct.pack("<i", (v - _EPOCH).days)  # type: ignore[operator]
    if type_name in ("float", "double") and math.isnan(v):  # type: ignore[arg-type]
        return struct.pack(_FMT[type_name], float("nan"))
    return struct.pack(_FMT[type_name], v)


def _java_order(type_name: str, v: object) -> tuple:
    """Java Comparable order: Float.compare/Double.compare put -0.0 < 0.0 and NaN above everything."""
    if type_name in ("float", "double"):
        f = float(v)  # type: ignore[arg-type]
        if math.isnan(f):
            return (1, 0.0, 0)
        return (0, f, 0 if math.copysign(1.0, f) < 0 else 1)
    if type_name == "date":
        return (0, (v - _EPOCH).days, 0)  # type: ignore[operator]
    return (0, v, 0)


def _values(type_name: str, n: int, seed: int) -> list[object]:
    rnd = random.Random(seed)
    if type_name in ("float", "double"):
        pool = [-0.0, 0.0, float("nan"), float("inf"), -float("inf"), -1.5, 1.5, 2.25, -3e-5, 1e10, -1e10, 7.0]
        return [None if rnd.random() < 0.1 else rnd.choice(pool) for _ in range(n)]
    if type_name == "date":
        return [None if rnd.random() < 0.1 else _EPOCH + dt.timedelta(days=rnd.randint(-800, 800)) for _ in range(n)]
    hi = {"tinyint": 127, "smallint": 32767, "int": 2**31 - 1, "bigint": 2**63 - 1}[type_name]
    span = min(hi, 300)
    edge = [0, -1, 1, min(hi, 255), min(hi, 256), -min(hi, 256), hi, -hi - 1]
    return [None if rnd.random() < 0.1 else (rnd.choice(edge) if rnd.random() < 0.2 else rnd.randint(-span, span))
            for _ in range(n)]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = data[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, pos


def _entries(data: bytes, off: int, length: int) -> list[tuple[bytes, int, int]]:
    """(key, offset, length) entries of an uncompressed trailed block (spec §2.4–§2.6)."""
    assert data[off + length] == 0  # compression type none
    body = data[off:off + length]
    n, pos = _varint(body, 0)
    out = []
    for _ in range(n):
        klen, pos = _varint(body, pos)
        key = body[pos:pos + klen]
        pos += klen
        o, pos = _varint(body, pos)
        ln, pos = _varint(body, pos)
        out.append((key, o, ln))
    assert pos == len(body)
    return out


def _file_keys(data: bytes) -> list[bytes]:
    """Every dictionary key in file order, block by block (footer spec §2.2)."""
    *_, index_off, index_len, value_count, version, magic = struct.unpack(">qiqiqiiii", data[-48:])
    assert (version, magic) == (1, 0x42474958)
    keys: list[bytes] = []
    for first, boff, blen in _entries(data, index_off, index_len):
        block = [k for k, _, _ in _entries(data, boff, blen)]
        assert block[0] == first
        keys.extend(block)
    assert len(keys) == value_count
    return keys


TYPES = ["tinyint", "smallint", "int", "bigint", "date", "float", "double"]


@pytest.mark.parametrize("type_name", TYPES)
@pytest.mark.parametrize("block_size", [24, 16384])
def test_bytes_order_file_is_byte_ordered_and_read_correctly(type_name: str, block_size: int) -> None:
    kt = parse_type(type_name)
    values = _values(type_name, 600, seed=len(type_name) + block_size)
    rids = list(range(len(values)))
    random.Random(3).shuffle(rids)  # rows arrive in any order
    data, written = write_index_bytes(values, rids, kt, {"bgix.key-order": "bytes",
                                                         "bitmap-index.dictionary-block-size": block_size})
    # (a) keys strictly increasing in unsigned byte order, exactly the distinct serialized values
    keys = _file_keys(data)
    assert keys == sorted(set(keys)) == sorted({_ser(type_name, v) for v in values if v is not None})
    logical = [_ser(type_name, v) for v in sorted({_ser(type_name, v): v for v in values if v is not None}.values(),
                                                   key=lambda v: _java_order(type_name, v))]
    assert keys != logical  # the orders really differ for these values
    # spec §4: metadata first/last are the logical smallest and largest keys (as pypaimon's writer records)
    meta = parse_meta(kt, written.meta)
    assert _ser(type_name, meta.first_key) == logical[0] and _ser(type_name, meta.last_key) == logical[-1]
    # (b) our reader detects the order and answers like a plain-Python oracle
    r = open_index(BytesSource(data), kt)
    assert r.key_order == "bytes"
    by_key: dict[bytes, set[int]] = {}
    for v, rid in zip(values, rids):
        if v is not None:
            by_key.setdefault(_ser(type_name, v), set()).add(rid)
    distinct = {_ser(type_name, v): v for v in values if v is not None}
    for kb, v in distinct.items():
        assert set(r.eq(v)) == by_key[kb], v
    assert set(r.null_rows()) == {rid for v, rid in zip(values, rids) if v is None}
    some = list(distinct.values())[::3]
    assert set(r.isin(some)) == set().union(*(by_key[_ser(type_name, v)] for v in some))
    missing = {"date": _EPOCH + dt.timedelta(days=5000), "float": 0.125, "double": 0.125}.get(type_name, 99)
    if _ser(type_name, missing) not in by_key:
        assert set(r.eq(missing)) == set()
    ordered = sorted(distinct.values(), key=lambda v: _java_order(type_name, v))
    lo, hi = ordered[len(ordered) // 4], ordered[3 * len(ordered) // 4]
    jl, jh = _java_order(type_name, lo), _java_order(type_name, hi)
    expect = {rid for v, rid in zip(values, rids) if v is not None and jl <= _java_order(type_name, v) <= jh}
    assert set(r.range(lo, hi)) == expect
    expect = {rid for v, rid in zip(values, rids) if v is not None and _java_order(type_name, v) > jl}
    assert set(r.range(lo, None, low_inclusive=False)) == expect


@pytest.mark.parametrize("type_name", ["int", "double"])
def test_logical_default_unchanged_and_explicit_logical_is_identical(type_name: str) -> None:
    kt = parse_type(type_name)
    values = _values(type_name, 300, seed=7)
    rids = list(range(300))
    default, _ = write_index_bytes(values, rids, kt, IndexOptions(dictionary_block_size=40))
    explicit, _ = write_index_bytes(values, rids, kt, {"bgix.key-order": "LOGICAL",
                                                       "bitmap-index.dictionary-block-size": "40"})
    assert default == explicit
    keys = _file_keys(default)
    distinct = {_ser(type_name, v): v for v in values if v is not None}
    assert keys == [_ser(type_name, v) for v in sorted(distinct.values(), key=lambda v: _java_order(type_name, v))]
    assert open_index(BytesSource(default), kt).key_order == "logical"


@pytest.mark.parametrize("type_name,values", [("string", ["b", None, "a", "ä", "", "zz", "a"]),
                                              ("boolean", [True, None, False, True])])
def test_strings_and_booleans_are_the_same_in_both_orders(type_name: str, values: list) -> None:
    kt = parse_type(type_name)
    rids = list(range(len(values)))
    assert (write_index_bytes(values, rids, kt, {"bgix.key-order": "bytes"})[0]
            == write_index_bytes(values, rids, kt)[0])


def test_files_are_cut_in_logical_order_like_pypaimon(tmp_path: Path) -> None:
    # pypaimon sorts rows logically, cuts files, and orders each file's keys by bytes: same cuts and metadata
    kt = parse_type("int")
    values = _values("int", 200, seed=11)
    out = {}
    for order in ("logical", "bytes"):
        names = iter(range(100))
        out[order] = write_index_files(values, list(range(200)), kt, IndexOptions(key_order=order),
                                       records_per_file=50, new_path=lambda o=order: f"{o}/f{next(names)}.index",
                                       storage=Storage(str(tmp_path)))
    assert [(f.row_count, f.meta) for f in out["bytes"]] == [(f.row_count, f.meta) for f in out["logical"]]
    union: dict[int, set[int]] = {}
    for f in out["bytes"]:
        data = (tmp_path / f.path).read_bytes()
        assert _file_keys(data) == sorted(_file_keys(data))
        r = open_index(BytesSource(data), kt)
        for v, o, n in r.located_entries():
            union.setdefault(v, set()).update(r.bitmap_at(o, n))
    assert union == {v: {i for i, x in enumerate(values) if x == v} for v in set(values) - {None}}


def test_option_parsing() -> None:
    assert IndexOptions().key_order == "logical"
    assert parse_options({"bgix.key-order": " Bytes "}).key_order == "bytes"
    assert parse_options("bgix.key-order=LOGICAL").key_order == "logical"
    assert parse_options(parse_options({"bgix.key-order": "bytes"}).to_dict()).key_order == "bytes"
    with pytest.raises(InvalidOptionError, match=r"bgix\.key-order.*logical, bytes"):
        parse_options({"bgix.key-order": "little-endian"})
    with pytest.raises(InvalidOptionError, match=r"bgix\.key-order"):
        IndexOptions(key_order="java")
