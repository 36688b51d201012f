"""Decoded-bitmap cache: a warm query reads and decodes nothing it has seen, answers stay exact, budgets hold.

Expected rows come from plain Python over the input keys.
"""
from __future__ import annotations

import random

import pytest
from pyroaring import BitMap64

from index_format import open_index, parse_type
from index_format.global_index.writer import write_index_bytes
from index_format.lru import ByteLRU
from index_format.storage import BytesSource

INT = parse_type("int")


def _file(n: int = 20000, distinct: int = 300, seed: int = 3) -> tuple[bytes, list[int | None]]:
    rng = random.Random(seed)
    keys: list[int | None] = [None if rng.random() < 0.05 else rng.randrange(distinct) for _ in range(n)]
    data, _ = write_index_bytes(keys, list(range(n)), INT, {"bitmap-index.dictionary-block-size": "1kb"})
    return data, keys


def _expected(keys: list[int | None], test) -> BitMap64:
    return BitMap64(i for i, k in enumerate(keys) if k is not None and test(k))


@pytest.mark.parametrize("budget", [64 << 20, 20_000])
def test_warm_answers_need_no_io_and_stay_exact(budget: int) -> None:
    data, keys = _file()
    cache: ByteLRU = ByteLRU(budget)
    questions = [
        ("eq", lambda r: r.eq(17), lambda k: k == 17),
        ("in", lambda r: r.isin([3, 5, 250, 999]), lambda k: k in (3, 5, 250)),
        ("range", lambda r: r.range(40, 90, high_inclusive=False), lambda k: 40 <= k < 90),
        ("wide", lambda r: r.range(10, None), lambda k: k >= 10),
    ]
    reader = open_index(BytesSource(data, name="a.index"), INT, bitmap_cache=cache)
    for _name, ask, test in questions:
        assert ask(reader) == _expected(keys, test)
    # a new reader of the same file (another request) shares the cache
    warm = open_index(BytesSource(data, name="a.index"), INT, bitmap_cache=cache)
    for _name, ask, test in questions:
        before = (warm.stats.bytes_read, warm.stats.bitmaps_read)
        got = ask(warm)
        assert got == _expected(keys, test)
        if budget > len(data) * 4:
            # the dictionary blocks are cached per reader, so only bitmap reads are compared
            assert warm.stats.bitmaps_read == before[1], _name
    assert cache.bytes <= budget


def test_cached_answers_cannot_be_changed_by_callers() -> None:
    data, keys = _file()
    cache: ByteLRU = ByteLRU(64 << 20)
    reader = open_index(BytesSource(data, name="b.index"), INT, bitmap_cache=cache)
    first = reader.eq(17)    # a miss: the caller gets its own bitmap
    first.add(10**9)
    second = reader.eq(17)   # a hit: the cached one, frozen
    with pytest.raises((AttributeError, TypeError)):
        second.add(10**9)    # a caller cannot alter what the next query will get
    mine = BitMap64(second)
    mine.add(10**9)
    assert reader.eq(17) == _expected(keys, lambda k: k == 17)
    union = reader.isin([1, 2])
    union |= BitMap64([10**9])   # rebinding a result never touches the cached bitmaps
    assert reader.isin([1, 2]) == _expected(keys, lambda k: k in (1, 2))


def test_a_file_of_another_size_is_another_entry() -> None:
    data_a, keys_a = _file(seed=4)
    data_b, keys_b = _file(n=20001, seed=5)
    cache: ByteLRU = ByteLRU(64 << 20)
    for data, keys in ((data_a, keys_a), (data_b, keys_b), (data_a, keys_a)):
        reader = open_index(BytesSource(data, name="same-path.index"), INT, bitmap_cache=cache)
        assert reader.range(100, 200) == _expected(keys, lambda k: 100 <= k <= 200)
