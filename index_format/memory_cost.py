"""What a cached object really keeps resident: the one rule bgix's byte-budgeted caches charge by.

The constants were measured, not derived: N objects of a kind held in an OrderedDict under a (path, size,
offset) key as `ByteLRU` holds them, resident memory after `malloc_trim` divided by N (CPython 3.11, glibc,
pyroaring 1.x). A cached one-row bitmap keeps ~495 bytes (32-bit) or ~720 (64-bit) though its stored form is
18–30; a decoded dictionary block keeps ~240 bytes per 8-byte-key entry once its sort keys and arrays are
filled. Charging the stored length instead let RSS run to several times `BGIX_CACHE_BYTES` (issue 34).
`tests/unit/index_format/test_memory_cost.py` checks each formula against measured RSS. Imports nothing
from the package.
"""
from __future__ import annotations

from typing import Any

# Per cached bitmap: the pyroaring object, its roaring_bitmap_t, the LRU slot, key and value tuples.
_BITMAP_FIXED = {32: 520, 64: 760}
# Per container: its struct, key, typecode and pointer slots, and the malloc headers of its data.
_BITMAP_PER_CONTAINER = {32: 80, 64: 170}
_LRU_ENTRY = 200   # an LRU slot, its key tuple and (value, cost) tuple, for entries with no measured fixed part


def bitmap_bytes(bm: Any) -> int:
    """Resident bytes of a cached pyroaring bitmap (FrozenBitMap or FrozenBitMap64) and its LRU entry.

    Array and run containers allocate a little over their data; bitset containers are 8 KiB aligned
    allocations that cost ~10.5 KiB each (measured).
    """
    stats = bm.get_statistics()
    width = 64 if type(bm).__name__.endswith("64") else 32
    data = stats["n_bytes_array_containers"] + stats["n_bytes_run_containers"]
    return int(_BITMAP_FIXED[width] + _BITMAP_PER_CONTAINER[width] * stats["n_containers"]
               + 1.1 * data + 1.3 * stats["n_bytes_bitset_containers"])


# A decoded dictionary block, per entry: its key (bytes object, rounded to pymalloc's 16 bytes), the key's
# logical sort key (filled later; an int or a str about as large as the key), the offset and length ints, the
# list slots of keys / offsets / lengths / sort keys, the exact-match dict's slot, and the numpy offset/length
# arrays (filled later). Charged at insertion with the later fills included, so it never grows uncharged.
_BLOCK_FIXED = 1024
_BLOCK_PER_ENTRY = 220


def decoded_block_bytes(entries: int, key_bytes: int) -> int:
    """Resident bytes of a decoded dictionary block of `entries` keys totalling `key_bytes` bytes."""
    rounded = key_bytes + 15 * entries   # each key object rounded up to 16 bytes, at worst
    return _BLOCK_FIXED + _BLOCK_PER_ENTRY * entries + 2 * rounded


def lru_entry_bytes(value_bytes: int) -> int:
    """An LRU entry holding `value_bytes` of payload (numpy arrays, bytes) plus its slot and tuples."""
    return _LRU_ENTRY + int(value_bytes)
