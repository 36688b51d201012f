"""What the byte-budgeted caches charge (index_format.memory_cost) against what the objects really keep resident:
many objects of one kind held the way ByteLRU holds them, RSS (after malloc_trim) before and after. Each
formula must not under-charge (an under-charged cache lets RSS exceed BGIX_CACHE_BYTES, issue 34: a one-row
bitmap was charged 126 bytes and kept ~495) and must not over-charge wildly (the cache would hold far less
than its budget). Each measurement runs in a fresh process: a long-lived test worker reuses memory earlier tests
freed, which hides what new objects take."""
from __future__ import annotations

import ctypes
import gc
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pyroaring import BitMap, BitMap64, FrozenBitMap, FrozenBitMap64

from index_format.global_index.dictionary import decode_entries, encode_entry
from index_format.layout import varint
from index_format.global_index.reads import decode_piece
from index_format.keys import sort_keys_of_bytes
from index_format.lru import ByteLRU
from index_format.memory_cost import bitmap_bytes
from index_format.types import parse_type

_LIBC = ctypes.CDLL("libc.so.6")
_PATH = "/warehouse/tables/t/indexes/uid/data/0123456789abcdef/000000000000-000000999999-b7ff624d95a0-0000.index"


def _rss() -> int:
    gc.collect()
    _LIBC.malloc_trim(0)
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _measured(make: Callable[[int], Any], n: int) -> tuple[float, Any]:
    """Resident bytes per object of `make(i)` kept in an OrderedDict under a cache-shaped key, and the last one."""
    held: OrderedDict[tuple[str, int, int], tuple[Any, int]] = OrderedDict()
    before = _rss()
    obj = None
    for i in range(n):
        obj = make(i)
        held[(_PATH, 43_969_310, 1_000_000 + 37 * i)] = (obj, 1000 + i)
    per = (_rss() - before) / n
    del held
    return per, obj


class _Reads:
    path = "memory-cost"


def _stored(piece: bytes) -> Any:
    """A bitmap as the cache keeps it: decoded from its stored portable bytes."""
    return decode_piece(_Reads(), memoryview(piece), 0)   # type: ignore[arg-type]


_RNG = np.random.default_rng(34)
_SHAPES: list[tuple[str, Callable[[int], BitMap64], int]] = [
    ("one row", lambda i: BitMap64([7 * i]), 60_000),
    ("four rows", lambda i: BitMap64([i, i + 100, i + 200, i + 300]), 60_000),
    ("one row per container", lambda i: BitMap64(range(i, i + 100 * 70_000, 70_000)), 3_000),
    ("array container", lambda i: BitMap64((_RNG.choice(65_536, 4_000, replace=False) + (i << 16)).tolist()), 1_500),
    ("bitset container", lambda i: BitMap64((_RNG.choice(65_536, 30_000, replace=False) + (i << 16)).tolist()), 600),
    ("runs", lambda i: BitMap64(range(i, i + 1_000_000)), 600),
    ("64-bit ids", lambda i: BitMap64([(1 << 40) + 3 * i, (1 << 41) + i]), 40_000),
]


def _in_fresh_process(fn: Callable[..., Any], *args: object) -> Any:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result(timeout=300)


def _bitmap_probe(name: str) -> tuple[float, int]:
    """(resident bytes per cached bitmap of shape `name`, what bitmap_bytes charges for one)."""
    make, n = next((m, n) for s, m, n in _SHAPES if s == name)
    # stored forms made before measuring (their temporaries would fragment the heap the cached objects sit in)
    pieces = [make(i).serialize() for i in range(64)]
    per, last = _measured(lambda i: _stored(pieces[i % 64]), n)
    assert isinstance(last, (FrozenBitMap, FrozenBitMap64))
    return per, bitmap_bytes(last)


@pytest.mark.parametrize("name", [s[0] for s in _SHAPES])
def test_a_cached_bitmap_is_charged_what_it_keeps_resident(name: str) -> None:
    per, charged = _in_fresh_process(_bitmap_probe, name)
    assert charged >= 0.95 * per, f"{name}: charged {charged} bytes, keeps {per:.0f}"
    assert charged <= 2.0 * per + 64, f"{name}: charged {charged} bytes, keeps only {per:.0f}"


def _block(n: int, key_of: Callable[[int], bytes]) -> bytes:
    """A dictionary block body (spec §2.5): entry count, then (key, bitmap offset, bitmap length) entries."""
    return varint(n) + b"".join(encode_entry(key_of(i), 1000 + 40 * i, 30 + i % 300) for i in range(n))


_KEYS: dict[str, Callable[[int], bytes]] = {
    "bigint": lambda i: (10_000_000 + 17 * i).to_bytes(8, "big", signed=True),
    "string": lambda i: f"user-{i:09d}@example.org".encode(),
}


def _block_probe(kind: str) -> tuple[float, int]:
    """(resident bytes per decoded block of `kind` keys with its lazy fills, what resident_bytes charges)."""
    kt = parse_type(kind)
    body = _block(1_200, _KEYS[kind])
    seq = iter(range(1 << 30))

    def decode(_: int) -> Any:
        blk = decode_entries(body, file_size=1 << 40, block=f"block {next(seq)}")
        blk.lookup = dict(zip(blk.keys, range(len(blk.keys))))
        blk.sort_keys = sort_keys_of_bytes(kt, blk.keys)   # filled later by the reader: charged up front
        blk.extra["np"] = (np.array(blk.offsets, dtype=np.int64), np.array(blk.lengths, dtype=np.int64))
        return blk

    per, last = _measured(decode, 150)
    return per, last.resident_bytes()


@pytest.mark.parametrize("kind", sorted(_KEYS))
def test_a_decoded_dictionary_block_is_charged_what_it_keeps_resident(kind: str) -> None:
    per, charged = _in_fresh_process(_block_probe, kind)
    assert charged >= 0.95 * per, f"{kind}: charged {charged} bytes, keeps {per:.0f}"
    assert charged <= 2.0 * per, f"{kind}: charged {charged} bytes, keeps only {per:.0f}"


def _lru_probe(budget: int) -> tuple[int, int, int]:
    """(RSS growth, bytes charged, and entries kept) of a ByteLRU of one-row bitmaps filled far past `budget`."""
    lru: ByteLRU[Any] = ByteLRU(budget)
    before = _rss()
    pieces = [BitMap64([11 * i]).serialize() for i in range(64)]
    for i in range(200_000):
        bm = _stored(pieces[i % 64])
        lru.put((_PATH, 1, i), bm, bitmap_bytes(bm))
    return _rss() - before, lru.bytes, len(lru)


def test_the_bitmap_cache_holds_no_more_than_its_budget_of_resident_memory() -> None:
    """A ByteLRU of cached one-row bitmaps filled far past its budget keeps what it is charged: about the budget
    in RSS (on the old charge, stored length + 96, it kept ~4x its budget)."""
    budget = 8 << 20
    grown, charged, kept = _in_fresh_process(_lru_probe, budget)
    assert charged <= budget
    assert grown <= budget * 1.1 + (2 << 20), f"{grown >> 10} KiB resident for a {budget >> 10} KiB budget"
    assert kept >= budget // 1200, kept   # and it still holds a useful number of them


def test_an_int_dictionary_is_charged_by_its_stored_ids() -> None:
    """32-bit and 64-bit forms of the same ids: each charged as its own kind (64-bit keeps more)."""
    ids = list(range(0, 5_000_000, 1_000))
    small, big = FrozenBitMap(BitMap(ids)), FrozenBitMap64(BitMap64(ids))
    assert bitmap_bytes(big) > bitmap_bytes(small) > 2 * len(ids)
