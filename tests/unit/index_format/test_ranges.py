"""index_format.ranges against an oracle of plain Python sets of ints over small universes."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from index_format import ranges

UNIVERSE = 64

# Ranges as the callers hand them in: any order, overlapping, touching, empty (start > end), lists or tuples.
bounds = st.integers(min_value=0, max_value=UNIVERSE)
range_like = st.tuples(bounds, bounds).flatmap(
    lambda r: st.sampled_from([r, list(r)]))
range_lists = st.lists(range_like, max_size=8)


def ids(rs: object) -> set[int]:
    """The oracle: every id the ranges name, enumerated one by one."""
    return {i for start, end in rs for i in range(start, end + 1)}  # type: ignore[attr-defined]


def assert_merged(out: list[tuple[int, int]]) -> None:
    """Sorted tuples, each non-empty, with a gap of at least one id between neighbours."""
    assert all(type(r) is tuple and len(r) == 2 and r[0] <= r[1] for r in out)
    assert all(a[1] + 1 < b[0] for a, b in zip(out, out[1:]))


@given(range_lists)
def test_merge(rs: list[tuple[int, int]]) -> None:
    out = ranges.merge(rs)
    assert_merged(out)
    assert ids(out) == ids(rs)


@given(st.lists(range_lists, max_size=4))
def test_intersect(lists: list[list[tuple[int, int]]]) -> None:
    out = ranges.intersect(*lists)
    assert_merged(out)
    expected = set.intersection(*(ids(rs) for rs in lists)) if lists else set()
    assert ids(out) == expected


@given(range_lists, range_lists)
def test_subtract(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    out = ranges.subtract(a, b)
    assert_merged(out)
    assert ids(out) == ids(a) - ids(b)


@given(range_lists, st.integers(min_value=-2, max_value=UNIVERSE + 2))
def test_complement(rs: list[tuple[int, int]], total: int) -> None:
    out = ranges.complement(rs, total)
    assert_merged(out)
    assert ids(out) == set(range(max(total, 0))) - ids(rs)


@given(range_lists, st.integers(min_value=1, max_value=10))
def test_chunks(rs: list[tuple[int, int]], size: int) -> None:
    out = ranges.chunks(rs, size)
    assert ids(out) == ids(rs)
    assert all(1 <= end - start + 1 <= size for start, end in out)
    assert out == sorted(out) and all(a[1] < b[0] for a, b in zip(out, out[1:]))
    # Only the last chunk of each merged range may be short.
    for start, end in out:
        whole = next(r for r in ranges.merge(rs) if r[0] <= start <= r[1])
        assert (start - whole[0]) % size == 0
        assert end - start + 1 == size or end == whole[1]


def test_chunks_rejects_non_positive_size() -> None:
    with pytest.raises(ValueError, match="positive"):
        ranges.chunks([(0, 9)], 0)


@given(range_lists)
def test_to_bitmap(rs: list[tuple[int, int]]) -> None:
    assert set(ranges.to_bitmap(rs)) == ids(rs)


def test_large_ids_and_examples() -> None:
    big = (1 << 62, (1 << 62) + 9)
    assert len(ranges.to_bitmap([big])) == 10
    assert ranges.subtract([(0, 9)], [[2, 3], [5, 5], [9, 20]]) == [(0, 1), (4, 4), (6, 8)]
    assert ranges.complement([[0, 4], [10, 30]], 12) == [(5, 9)]
    assert ranges.intersect() == [] and ranges.merge([]) == []


@given(range_lists, st.lists(st.integers(min_value=-3, max_value=UNIVERSE + 3), max_size=40))
def test_contains(rs: list[tuple[int, int]], probe: list[int]) -> None:
    import numpy as np

    got = ranges.contains(np.array(probe, dtype=np.int64), rs)
    assert got.tolist() == [i in ids(rs) for i in probe]
