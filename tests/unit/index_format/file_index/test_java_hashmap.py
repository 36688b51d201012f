"""Java hash codes and java.util.HashMap iteration order (index_format.file_index.java_hash / java_hashmap).

Ground truth: Paimon's V1 bitmap files list their entries in HashMap iteration order, and the container
files list columns / index types in HashMap<String> order. Both are parsed here independently.
"""
from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from index_format.file_index.java_hash import (
    binary_string_hash, binary_string_hashes, java_string_order, key_hash, key_hashes, long_hash, string_hash)
from index_format.file_index.java_hashmap import (
    computeifabsent_order, put_order, simulate_computeifabsent, spread)
from index_format.file_index.values import java_order, java_value, paimon_type
from tests.file_index_vectors import FILE_INDEX, load_rows, load_vectors

V1_VECTORS = [v for v in load_vectors(index_type="bitmap") if v.options.get("version") == "1"]
_FIXED = {"TINYINT": ">b", "SMALLINT": ">h", "INT": ">i", "DATE": ">i", "TIME": ">i", "FLOAT": ">i",
          "BIGINT": ">q", "TIMESTAMP": ">q", "DOUBLE": ">q"}


def _v1_keys(data: bytes, data_type: str) -> list[object]:
    """Entry keys of a V1 bitmap file, in file order, in values.java_value's form."""
    version, _rows, n, has_null = struct.unpack_from(">biib", data, 0)
    assert version == 1
    pos = 10 + (4 if has_null else 0)
    base = data_type.split("(")[0].upper()
    keys: list[object] = []
    for _ in range(n):
        if base in ("STRING", "VARCHAR", "CHAR"):
            (length,) = struct.unpack_from(">i", data, pos)
            keys.append(data[pos + 4:pos + 4 + length])
            pos += 4 + length
        elif base == "BOOLEAN":
            keys.append(data[pos] != 0)
            pos += 1
        else:
            fmt = _FIXED[base]
            keys.append(struct.unpack_from(fmt, data, pos)[0])
            pos += struct.calcsize(fmt)
        pos += 4  # offset
    return keys


def _distinct(v) -> tuple[list[object], bool]:
    """Distinct non-null keys in first-occurrence order, and whether a non-null row followed the last one."""
    kt = paimon_type(v.data_type)
    seen: dict[object, None] = {}
    last_new = last_row = -1
    for row, value in enumerate(load_rows(v.input, v.data_type)):
        jv = java_value(kt, value)
        if jv is None:
            continue
        last_row = row
        if jv not in seen:
            seen[jv] = None
            last_new = row
    return list(seen), last_row > last_new


def _naive_order(hashes: list[int], cap: int) -> list[int]:
    """List-bin-only order (bucket, newest first): what the writer gets without the tree paths."""
    return sorted(range(len(hashes)), key=lambda i: (spread(hashes[i]) & (cap - 1), -i))


@pytest.mark.parametrize("v", V1_VECTORS, ids=lambda v: v.file.name)
def test_bitmap_v1_entry_order(v) -> None:
    kt = paimon_type(v.data_type)
    keys, trailing = _distinct(v)
    expected = _v1_keys(v.file.read_bytes(), v.data_type)
    assert sorted(expected, key=lambda k: java_order(kt, k)) == sorted(keys, key=lambda k: java_order(kt, k))
    hashes = [key_hash(kt, k) for k in keys]
    assert key_hashes(kt, keys).tolist() == hashes
    sort_keys = [java_order(kt, k) for k in keys]
    fast = computeifabsent_order(hashes, sort_keys, trailing_call=trailing).tolist()
    assert [keys[i] for i in fast] == expected
    assert [keys[i] for i in simulate_computeifabsent(hashes, sort_keys, trailing_call=trailing)] == expected


def test_vectors_cover_the_hard_paths() -> None:
    by_name = {v.file.name.split(".")[0]: v for v in V1_VECTORS}
    keys, trailing = _distinct(by_name["resize_edge"])
    assert not trailing and len(keys) == 13  # the 13th key crossed the threshold: no resize follows
    for name in ("long_collide", "int_collide"):  # the list-only model gets these wrong: trees matter
        v = by_name[name]
        kt = paimon_type(v.data_type)
        keys, trailing = _distinct(v)
        hashes = [key_hash(kt, k) for k in keys]
        caps = {16 << i for i in range(12)}
        expected = _v1_keys(v.file.read_bytes(), v.data_type)
        assert all([keys[i] for i in _naive_order(hashes, c)] != expected for c in caps)


# -- hash codes ----------------------------------------------------------------------------------------

def test_java_hash_codes() -> None:
    assert string_hash("hello") == 99162322
    assert string_hash("") == 0
    assert string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # UTF-16 code units
    assert string_hash("polygenelubricants") == -2147483648  # a known Integer.MIN_VALUE hashCode
    assert long_hash(-1) == 0 and long_hash(1 << 32) == 1 and long_hash(-(1 << 63)) == -2147483648
    bigint, double, flt = paimon_type("BIGINT"), paimon_type("DOUBLE"), paimon_type("FLOAT")
    assert key_hash(bigint, 5) == 5 and key_hash(bigint, -5) == 4
    assert key_hash(double, java_value(double, -0.0)) == -2147483648  # Double.hashCode(-0.0)
    assert key_hash(double, java_value(double, 0.0)) == 0
    assert key_hash(double, java_value(double, 1.0)) == 1072693248
    assert key_hash(double, java_value(double, float("nan"))) == 2146959360
    assert key_hash(flt, java_value(flt, 1.0)) == 1065353216
    assert key_hash(paimon_type("BOOLEAN"), True) == 1231 and key_hash(paimon_type("BOOLEAN"), False) == 1237
    assert key_hash(paimon_type("INT"), -7) == -7 and key_hash(paimon_type("TINYINT"), -128) == -128
    # String.compareTo works on UTF-16 units: a surrogate pair sorts below U+E000 (Python str: above)
    assert java_string_order("\U0001F600") < java_string_order("\ue000") < java_string_order("\uffff")


def test_binary_string_hash_known_bytes() -> None:
    # 4-byte-aligned input is plain MurmurHash3_x86_32 (seed 42); these pin the tail-byte handling too.
    values = [b"", b"a", b"ab", b"abc", b"abcd", b"\xff", b"\xc3\xbc", "жü".encode()]
    hashes = [binary_string_hash(b) for b in values]
    assert binary_string_hashes(values).tolist() == hashes
    assert len(set(hashes)) == len(hashes)
    assert all(-(1 << 31) <= h < (1 << 31) for h in hashes)


@given(st.lists(st.binary(max_size=300), max_size=40))
def test_binary_string_hashes_match_scalar(values: list[bytes]) -> None:
    assert binary_string_hashes(values).tolist() == [binary_string_hash(b) for b in values]


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=50))
def test_long_hashes_match_scalar(values: list[int]) -> None:
    kt = paimon_type("BIGINT")
    assert key_hashes(kt, values).tolist() == [key_hash(kt, v) for v in values]
    assert key_hashes(kt, np.asarray(values, dtype=np.int64)).tolist() == [key_hash(kt, v) for v in values]


# -- fast path against the full simulation ---------------------------------------------------------------

def _collision_heavy(rng: np.random.Generator, n: int, mode: str) -> tuple[list[int], list[int]]:
    """Distinct keys with their hashes and sort keys, built so that bins fill up (and trees form)."""
    if mode == "random":
        hashes = rng.integers(-(1 << 31), 1 << 31, n)
    elif mode == "lowbits":  # few low-bit patterns: buckets of 8+ at capacities 64 and up
        hashes = rng.integers(0, 4, n) + 64 * rng.integers(0, 1 << 9, n)
    elif mode == "same":  # repeated hashes of distinct keys: compareTo decides inside trees
        hashes = rng.integers(0, 3, n) * 1024 + rng.integers(0, 2, n)
    elif mode == "split":  # trees that split on resize: untreeified, re-treeified and kept whole
        spread_out = 1 + (rng.random(n) < 0.5) * rng.integers(1, 1 << 9, n)
        hashes = rng.integers(0, 8, n) + 64 * rng.integers(0, 1 << 5, n) * spread_out
    else:  # "mixed": a colliding cluster among ordinary keys (tainted and plain buckets side by side)
        hashes = np.where(rng.random(n) < 0.3, 5 + 64 * rng.integers(0, 1 << 10, n), rng.integers(0, 1 << 16, n))
    sort_keys = rng.permutation(n).tolist()
    return hashes.tolist(), sort_keys


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["random", "lowbits", "same", "split", "mixed"]), st.integers(0, 700),
       st.integers(0, 2 ** 32 - 1), st.booleans())
def test_fast_path_matches_simulation(mode: str, n: int, seed: int, trailing: bool) -> None:
    hashes, sort_keys = _collision_heavy(np.random.default_rng(seed), n, mode)
    expected = simulate_computeifabsent(hashes, sort_keys, trailing_call=trailing)
    assert computeifabsent_order(hashes, sort_keys, trailing_call=trailing).tolist() == expected
    assert sorted(expected) == list(range(n))


@pytest.mark.parametrize("mode", ["lowbits", "same", "split", "mixed"])
def test_fast_path_matches_simulation_large(mode: str) -> None:
    hashes, sort_keys = _collision_heavy(np.random.default_rng(7), 20000, mode)
    for trailing in (False, True):
        expected = simulate_computeifabsent(hashes, sort_keys, trailing_call=trailing)
        assert computeifabsent_order(hashes, sort_keys, trailing_call=trailing).tolist() == expected


def test_fast_path_on_uniform_hashes_with_a_real_tree() -> None:
    # 150k distinct uniform hashes (seed 10): some bin really becomes a tree, as in ~1 file in 10 at 1M keys
    n = 150_000
    hashes = np.random.default_rng(10).choice(2 ** 32, n, replace=False).astype(np.int64) - 2 ** 31
    expected = simulate_computeifabsent(hashes, None, trailing_call=True)
    assert computeifabsent_order(hashes, None, trailing_call=True).tolist() == expected
    final = 1 << 18  # 150k keys > 0.75 * 2^17
    assert _naive_order(hashes.tolist(), final) != expected


def test_treeify_bin_below_64_resizes() -> None:
    # one bucket at capacities 16..512 (spread = identity below 2^16): the 8th and 9th keys each double
    # the table (16 → 32 → 64) instead of treeifying, long before the size threshold
    hashes = [16 * 32 * i for i in range(9)]
    for trailing in (False, True):
        fast = computeifabsent_order(hashes, list(range(9)), trailing_call=trailing).tolist()
        assert fast == simulate_computeifabsent(hashes, list(range(9)), trailing_call=trailing)


def test_tree_needs_sort_keys_only_for_equal_hashes() -> None:
    hashes = [3] * 10  # 8th and 9th key double the table (16 → 64), the 10th treeifies
    with pytest.raises(ValueError):
        simulate_computeifabsent(hashes, None, trailing_call=False)
    assert computeifabsent_order([64 * i for i in range(40)], None, trailing_call=True).tolist() == \
        simulate_computeifabsent([64 * i for i in range(40)], None, trailing_call=True)


def test_put_order_appends_and_resizes_after_insertion() -> None:
    assert put_order([1, 17, 33]) == [0, 1, 2]  # one bucket: insertion order (tail)
    assert simulate_computeifabsent([1, 17, 33], trailing_call=False) == [2, 1, 0]  # head
    # 13 keys: put resizes right after the 13th (16 → 32), so 0 and 16 land in different buckets
    hashes = list(range(1, 13)) + [16]
    assert put_order(hashes)[-1] == 12
    assert simulate_computeifabsent(hashes, trailing_call=False)[0] == 12  # no resize: bucket 0 of 16


def test_empty() -> None:
    assert computeifabsent_order([], trailing_call=True).tolist() == []
    assert simulate_computeifabsent([], trailing_call=True) == []
    assert put_order([]) == []


# -- container: column and index-type order ----------------------------------------------------------------

def _read_utf(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", data, pos)
    return data[pos + 2:pos + 2 + n].decode("utf-8"), pos + 2 + n  # ASCII names: modified UTF-8 = UTF-8


def _container_head(path: Path) -> list[tuple[str, list[str]]]:
    data = path.read_bytes()
    magic, version, _head, ncols = struct.unpack_from(">qiii", data, 0)
    assert magic == 1493475289347502 and version == 1
    pos, out = 20, []
    for _ in range(ncols):
        column, pos = _read_utf(data, pos)
        (nidx,) = struct.unpack_from(">i", data, pos)
        pos += 4
        types = []
        for _ in range(nidx):
            name, pos = _read_utf(data, pos)
            types.append(name)
            pos += 8
        out.append((column, types))
    return out


def _string_map(names: list[str], *, put: bool) -> list[str]:
    hashes = [string_hash(s) for s in names]
    sort_keys = [java_string_order(s) for s in names]
    order = put_order(hashes, sort_keys) if put else computeifabsent_order(
        hashes, sort_keys, trailing_call=True).tolist()
    return [names[i] for i in order]


@pytest.mark.parametrize("name", ["abc", "map_nested", "empty_rows"])
def test_container_order(name: str) -> None:
    head = _container_head(FILE_INDEX / "container" / f"{name}.java.idx")
    columns = [c for c, _ in head]
    # Few keys in distinct buckets: every insertion order gives the file's order.
    for perm in itertools.permutations(columns):
        assert _string_map(list(perm), put=False) == columns
    for _, types in head:
        for perm in itertools.permutations(types):
            assert _string_map(list(perm), put=True) == types
    all_types = ["bloom-filter", "bitmap", "bsi", "range-bitmap"]
    assert _string_map(all_types[::-1], put=True) == all_types
