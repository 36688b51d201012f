"""btree files written by pypaimon-rust (tests/data/btree) read correctly: every key and row id, nulls, and random
predicates against a plain-Python evaluation of the table's rows; our writer reproduces the uncompressed files byte
for byte and the compressed ones block for block."""
from __future__ import annotations

import random

import numpy as np
import pytest

from index_format import codecs
from index_format.btree.btree_reader import open_btree_index
from index_format.btree.btree_writer import write_btree_bytes
from index_format.btree.sst_blocks import decode_block_body, decode_handles
from index_format.layout import BTREE_FOOTER_SIZE, TRAILER_SIZE
from index_format.btree.btree_footer import parse_btree_footer
from index_format.types import parse_type

from tests.unit.index_format.btree.btree_cases import (
    Vector, identity, java_order, load_rows, load_vectors, truth, where,
)

VECTORS = load_vectors()


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_every_key_and_row_is_read(v: Vector) -> None:
    rows = load_rows(v)
    sets, nulls, rep = truth(v.type, rows)
    r = open_btree_index(str(v.file), parse_type(v.type))
    assert r.version == v.version and r.key_order == "logical"
    got: dict[object, set[int]] = {}
    order = []
    for value, ids in r.entries():
        ident = identity(v.type, value)
        assert ident not in got, "a key appears twice"
        got[ident] = set(ids)
        order.append(java_order(v.type, value))
    assert got == sets
    assert order == sorted(order)
    assert set(r.null_rows()) == nulls
    assert set(r.non_null_rows()) == {rid for rid, val in rows if val is not None}
    assert r.value_count == len(sets)
    assert java_order(v.type, r.first_key()) == min(order) and java_order(v.type, r.last_key()) == max(order)


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_random_predicates_match_plain_python(v: Vector) -> None:
    rows = load_rows(v)
    sets, nulls, rep = truth(v.type, rows)
    r = open_btree_index(str(v.file), parse_type(v.type))
    rng = random.Random(hash(v.id) % 1000)
    values = [val for _, val in rows if val is not None]
    for _ in range(60):
        a = rng.choice(values)
        assert set(r.eq(a)) == sets[identity(v.type, a)]
        picks = rng.sample(values, 5) + [None]
        assert set(r.isin(picks)) == set().union(*(sets[identity(v.type, p)] for p in picks if p is not None))
        lo, hi = sorted((rng.choice(values), rng.choice(values)), key=lambda x: java_order(v.type, x))
        li, hi_inc = rng.random() < 0.5, rng.random() < 0.5
        klo, khi = java_order(v.type, lo), java_order(v.type, hi)
        expect = where(v.type, rows, lambda k: (klo < k or (li and k == klo)) and (k < khi or (hi_inc and k == khi)))
        assert set(r.range(lo, hi, low_inclusive=li, high_inclusive=hi_inc)) == expect
        assert set(r.range(lo, None, low_inclusive=li)) == where(v.type, rows, lambda k: klo < k or (li and k == klo))
        assert set(r.range(None, hi, high_inclusive=hi_inc)) == where(
            v.type, rows, lambda k: k < khi or (hi_inc and k == khi))
        assert set(r.range(hi, lo)) == (sets[identity(v.type, lo)] if klo == khi else set())
    if v.type == "string":
        for prefix in ["", "a", "ab", "key-0", "key-01", "日", "日本", "ü", "\U0001f600", "zz", "zz\x7f", "x'", "nope"]:
            p = prefix.encode()
            assert set(r.starts_with(prefix)) == where(v.type, rows, lambda k: k.startswith(p)), prefix
    assert set(r.null_rows()) == nulls


@pytest.mark.parametrize("v", [v for v in VECTORS if v.compression == "none" and v.version == 1], ids=lambda v: v.id)
def test_our_writer_reproduces_uncompressed_files(v: Vector) -> None:
    rows = load_rows(v)
    data, written = write_btree_bytes([val for _, val in rows], [rid for rid, _ in rows], parse_type(v.type),
                                      {"btree-index.block-size": str(v.block_size)})
    assert data == v.file.read_bytes()
    assert written.row_count == len(rows)


def _blocks(data: bytes) -> tuple[list[bytes], list[bytes], bytes]:
    """(decoded data block bodies, index keys, null bitmap bytes) of a btree file."""
    f = parse_btree_footer(data[-BTREE_FOOTER_SIZE:], len(data))
    body = codecs.decode_block(data[f.index_offset:f.index_offset + f.index_length + TRAILER_SIZE])
    idx = decode_block_body(body, path=None, block="index block")
    offs, sizes = decode_handles(idx, file_limit=f.index_offset, path=None, block="index block")
    bodies = [codecs.decode_block(data[o:o + s + TRAILER_SIZE]) for o, s in zip(offs.tolist(), sizes.tolist())]
    return bodies, idx.keys(), data[f.null_offset:f.null_offset + f.null_length + 4]


@pytest.mark.parametrize("v", [v for v in VECTORS if v.compression != "none"], ids=lambda v: v.id)
def test_our_compressed_files_hold_the_same_blocks(v: Vector) -> None:
    rows = load_rows(v)
    data, _ = write_btree_bytes([val for _, val in rows], [rid for rid, _ in rows], parse_type(v.type),
                                {"btree-index.block-size": str(v.block_size), "btree-index.compression": v.compression})
    assert _blocks(data) == _blocks(v.file.read_bytes())


def test_version_2_file_holds_every_list_encoding() -> None:
    (v,) = [v for v in VECTORS if v.version == 2]
    r = open_btree_index(str(v.file), parse_type(v.type))
    tags = set()
    for b in range(r.block_count):
        blk = r._block(b)
        tags |= {blk.raw[s] for s in blk.val_start.tolist()}
    assert tags == {0, 1, 2}   # single id, delta list, roaring bitmap
    rows = load_rows(v)
    sets, _, _ = truth(v.type, rows)
    assert max(len(s) for s in sets.values()) >= 150
    for key, ids in r.key_rows():
        assert ids.dtype == np.uint64 and bool((np.diff(ids.astype(np.int64)) > 0).all())
