"""Dense bit planes: row sets as numpy uint64 words (bit r of word r // 64 = row r), and the conversions between
them and roaring bitmaps.

Why: when rows are in random order every BSI slice is a run of 8 KB bitset containers, and a sweep over the
slices is bound by memory traffic. numpy's in-place word operations do the same work at about a third of
CRoaring's cost per operation (no container dispatch, no allocation), and a count is one popcount. The BSI
reader switches to planes only for such slices (bsi.py decides); results go back to BitMap64 through the
portable format, which for dense containers is a copy of the words.

Portable format (32-bit, CRoaring / RoaringFormatSpec): cookie 12346 + container count, or cookie 12347 with
the count in its high half and a run-flag bitset; per container (key, cardinality - 1) as two uint16; an
offset table (always without runs, with runs from 4 containers up); then each container: bitset (1024 uint64)
when cardinality > 4096, run list (uint16 count, then start / length - 1 pairs), or sorted uint16 values.
"""
from __future__ import annotations


import numpy as np
from pyroaring import BitMap64, FrozenBitMap64

from index_format.layout import BITMAP64_ONE_BUCKET_HIGH0, LE_U16, LE_U32, LE_U32_PAIR

WORDS = 1024            # words per 2^16-row container
ARRAY_MAX = 4096        # larger containers are bitsets in the portable format
_NO_RUN, _RUN = 12346, 12347
_BIT_OF_BYTE = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(bool)


def word_count(rows: int) -> int:
    """Words for rows 0..rows-1, rounded up to whole containers (conversions work container by container)."""
    return -(-max(rows, 1) // (64 * WORDS)) * WORDS


def words_from_portable(data: bytes | memoryview, nwords: int) -> np.ndarray:
    """Planes of a 32-bit portable roaring bitmap as serialized by CRoaring (trusted: decode it with pyroaring
    first to validate). Rows at or past nwords * 64 raise ValueError."""
    buf = memoryview(data)
    out = np.zeros(nwords, dtype=np.uint64)
    cookie = LE_U32.unpack_from(buf, 0)[0]
    if cookie & 0xFFFF == _RUN:
        size = (cookie >> 16) + 1
        flags = np.unpackbits(np.frombuffer(buf, np.uint8, (size + 7) // 8, 4), bitorder="little")[:size]
        pos = 4 + (size + 7) // 8
        has_offsets = size >= 4
    elif cookie == _NO_RUN:
        size = LE_U32.unpack_from(buf, 4)[0]
        flags = np.zeros(size, dtype=np.uint8)
        pos = 8
        has_offsets = True
    else:
        raise ValueError(f"not a portable roaring bitmap (cookie {cookie})")
    desc = np.frombuffer(buf, "<u2", 2 * size, pos).reshape(size, 2)
    pos += 4 * size + (4 * size if has_offsets else 0)
    bits = out.view(np.uint8)
    for i in range(size):
        key, card = int(desc[i, 0]), int(desc[i, 1]) + 1
        base = key * WORDS
        if base + WORDS > nwords:
            raise ValueError(f"container {key} lies past {nwords * 64} rows")
        if flags[i]:
            n = LE_U16.unpack_from(buf, pos)[0]
            runs = np.frombuffer(buf, "<u2", 2 * n, pos + 2).reshape(n, 2).astype(np.int64)
            pos += 2 + 4 * n
            chunk = np.zeros(64 * WORDS + 1, dtype=np.int8)
            np.add.at(chunk, runs[:, 0], 1)
            np.add.at(chunk, runs[:, 0] + runs[:, 1] + 1, -1)
            mask = np.cumsum(chunk[:-1], dtype=np.int32).astype(bool)
            out[base:base + WORDS] = np.packbits(mask, bitorder="little").view(np.uint64)
        elif card > ARRAY_MAX:
            out[base:base + WORDS] = np.frombuffer(buf, "<u8", WORDS, pos)
            pos += 8 * WORDS
        else:
            vals = np.frombuffer(buf, "<u2", card, pos).astype(np.int64)
            pos += 2 * card
            np.bitwise_or.at(bits, base * 8 + (vals >> 3), (1 << (vals & 7)).astype(np.uint8))
    return out


def words_from_bitmap(bm: BitMap64 | FrozenBitMap64, nwords: int) -> np.ndarray:
    """Planes of a 64-bit bitmap whose rows all lie below 2^32 (one bucket, high key 0)."""
    if not bm:
        return np.zeros(nwords, dtype=np.uint64)
    if bm.max() >= 1 << 32:
        raise ValueError(f"row {bm.max()} lies past {nwords * 64} rows")
    return words_from_portable(memoryview(bm.serialize())[len(BITMAP64_ONE_BUCKET_HIGH0):], nwords)


def bitmap_from_words(words: np.ndarray) -> BitMap64:
    """The rows set in `words` (length a multiple of WORDS) as a mutable BitMap64."""
    chunks = words.reshape(-1, WORDS)
    cards = np.bitwise_count(chunks).sum(axis=1, dtype=np.int64)
    keys = np.flatnonzero(cards)
    if not len(keys):
        return BitMap64()
    cards = cards[keys]
    sparse = keys[cards <= ARRAY_MAX]
    values: dict[int, bytes] = {}
    if len(sparse):
        # rows of the sparse containers: their nonzero bytes, each expanded through a 256 x 8 bit table
        sub = chunks[sparse].view(np.uint8)                       # (k, 8192) bytes
        where = np.flatnonzero(sub)
        hit = _BIT_OF_BYTE[sub.ravel()[where]]                     # (m, 8) bools
        which, bit = np.nonzero(hit)
        flat = where[which] * 8 + bit                              # bit position within sub, in order
        low = (flat & 0xFFFF).astype("<u2")
        ends = np.cumsum(cards[cards <= ARRAY_MAX])
        starts = ends - cards[cards <= ARRAY_MAX]
        for key, a, b in zip(sparse.tolist(), starts.tolist(), ends.tolist(), strict=True):
            values[key] = low[a:b].tobytes()
    n = len(keys)
    desc = np.empty((n, 2), dtype="<u2")
    desc[:, 0] = keys
    desc[:, 1] = cards - 1
    sizes = np.where(cards > ARRAY_MAX, 8 * WORDS, 2 * cards)
    offsets = (8 + 8 * n + np.concatenate(([0], np.cumsum(sizes)[:-1]))).astype("<u4")
    parts = [BITMAP64_ONE_BUCKET_HIGH0, LE_U32_PAIR.pack(_NO_RUN, n), desc.tobytes(), offsets.tobytes()]
    if not values:
        parts.append(chunks[keys].tobytes())     # every container a bitset: one copy
    else:
        for key in keys.tolist():
            v = values.get(key)
            parts.append(v if v is not None else chunks[key].tobytes())
    return BitMap64.deserialize(b"".join(parts))


def count(words: np.ndarray) -> int:
    return int(np.bitwise_count(words).sum(dtype=np.int64))
