"""The bit-sliced index over codes of a range-bitmap payload (spec 2.4) and its operations (spec 2.5).

Slice i holds the rows whose code has bit i set; the existence bitmap (EBM) holds the non-null rows. The
writer builds every slice with one vectorized bit test over the codes array. The reader decodes the 32-bit
portable slices straight into immutable 64-bit bitmaps (one-bucket prefix), once each, and answers `eq`,
`gt` (S - t operations), two-sided ranges (one sweep) and top-k / bottom-k on copies.

For random-order rows it also keeps the slices as dense word planes (planes.py). The same sweep functions
then run on numpy words, split across cores, and a count is a popcount. Once built, the cumulative row
count per code answers any count of a code range with two look-ups. Answers are the same either way; only
the cost differs.
"""
from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, overload

import numpy as np
from pyroaring import BitMap, BitMap64, FrozenBitMap64

from index_format.errors import CorruptFileError, TruncatedFileError, UnsupportedVersionError
from index_format.layout import BE_I32, BE_I32_PAIR, BITMAP64_ONE_BUCKET_HIGH0, RANGE_BSI_HEAD, be_i32s
from index_format.parallel import THREADS, map_parts
from index_format.range_bitmap import planes as planes_mod
from index_format.storage import RangeSource

VERSION = 1


def slice_count(card: int) -> int:
    """Paimon's slice count: bit length of card - 1 as a 64-bit value (64 when card = 0), at least 1."""
    return 64 if card <= 0 else max((card - 1).bit_length(), 1)


def _bitmap_bytes(ids: np.ndarray) -> bytes:
    """Run-optimized 32-bit portable bytes of sorted row ids (what Java's RoaringBitmap32.serialize writes)."""
    bm = BitMap()
    if len(ids):
        buf = array("I")
        contiguous = np.ascontiguousarray(ids, dtype=np.uint32)
        buf.frombytes(memoryview(contiguous).cast("B"))  # type: ignore[arg-type]  # numpy's stub: __buffer__ on 3.12+
        bm = BitMap(buf)
    bm.run_optimize()
    return bm.serialize()


def build_bsi(codes: np.ndarray, card: int) -> bytes:
    """BSI bytes for `codes` (one per row, -1 = null, else 0..card-1)."""
    valid = codes >= 0
    clean = codes.astype(np.uint32) if bool(valid.all()) else np.where(valid, codes, 0).astype(np.uint32)
    ebm = _bitmap_bytes(np.flatnonzero(valid))
    s = slice_count(card)
    slices = []
    bits = np.empty_like(clean)
    mask = np.empty(len(clean), dtype=bool)
    for i in range(s):
        if i >= 32:
            slices.append(_bitmap_bytes(np.zeros(0, dtype=np.uint32)))
            continue
        # a bool mask then flatnonzero is several times faster than flatnonzero on the integers
        np.bitwise_and(clean, np.uint32(1 << i), out=bits)
        np.not_equal(bits, 0, out=mask)
        slices.append(_bitmap_bytes(np.flatnonzero(mask)))
    index = bytearray()
    pos = 0
    for sl in slices:
        index += BE_I32_PAIR.pack(pos, len(sl))
        pos += len(sl)
    header = RANGE_BSI_HEAD.pack(VERSION, s if s < 128 else s - 256, len(ebm), 8 * s) + bytes(index)
    return BE_I32.pack(len(header)) + header + ebm + b"".join(slices)


# ---------------------------------------------------------------- reading

def decode_bitmap(data: bytes, *, path: str, block: str) -> FrozenBitMap64:
    """A 32-bit portable roaring bitmap as an immutable 64-bit bitmap (high key 0); malformed → CorruptFileError."""
    if len(data) < 8:
        raise CorruptFileError(f"bitmap of {len(data)} bytes is shorter than its header", path=path, block=block)
    try:
        return FrozenBitMap64.deserialize(BITMAP64_ONE_BUCKET_HIGH0 + data)
    except Exception as exc:  # pyroaring raises ValueError on malformed input
        raise CorruptFileError(f"malformed roaring bitmap: {exc}", path=path, block=block) from None


class BitSliceIndex:
    """Lazy reader of the BSI at `offset`..`end` of `source`; slices decoded once and cached.

    The cached EBM and slices are FrozenBitMap64: queries can share them between threads and cannot change
    them. Every operation starts from a mutable copy (or a binary operation's fresh result) and continues
    with in-place operators, so a query allocates one or two bitmaps, not one per slice.

    Why 64-bit and not pyroaring's 32-bit BitMap: on dense slices (rows in random order, every slice a run of
    8 KB bitset containers) the per-operation cost of BitMap and BitMap64 is the same (both are CRoaring
    container loops; a sweep is bound by reading the slices from memory), and a 32-bit result would still
    have to be converted to BitMap64 (serialize + deserialize, 0.4-1 ms on a 3M-row result) for the caller.
    bench/bench_range_sidecar.py measures the sweeps.
    """

    def __init__(self, source: RangeSource, offset: int, end: int, *, planes: bool = True) -> None:
        self._source = source
        self._planes_allowed = planes
        self._lock = threading.Lock()
        name = source.name
        block = "range-bitmap bit-slice header"
        if offset + 4 > end:
            raise TruncatedFileError("no room for the bit-slice index", path=name, block=block)
        hl = BE_I32.unpack(self._read(offset, 4, block))[0]
        if hl < 10 or hl > 10 + 8 * 255:
            raise CorruptFileError(f"bit-slice header length {hl}", path=name, block=block)
        if offset + 4 + hl > end:
            raise TruncatedFileError(f"bit-slice header of {hl} bytes runs past the end of the payload",
                                     path=name, block=block)
        head = self._read(offset + 4, hl, block)
        version, s, ebm_len, idx_len = RANGE_BSI_HEAD.unpack_from(head)
        if version > VERSION:
            raise UnsupportedVersionError(f"bit-slice index version {version} (this library reads 1)",
                                          path=name, block=block)
        if s < 0 or idx_len != 8 * s or hl != 10 + idx_len or ebm_len < 8:
            raise CorruptFileError(f"{s} slices, index {idx_len} bytes, header {hl} bytes, EBM {ebm_len} bytes",
                                   path=name, block=block)
        pairs = be_i32s(2 * s).unpack_from(head, 10) if s else ()
        self.slice_count: int = s
        self._ebm_at = offset + 4 + hl
        self._ebm_len = ebm_len
        self._slices_at = self._ebm_at + ebm_len
        self._offsets = list(pairs[0::2])
        self._lengths = list(pairs[1::2])
        for i in range(s):
            o, n = self._offsets[i], self._lengths[i]
            if o < 0 or n < 8:
                raise CorruptFileError(f"slice {i} at {o} with {n} bytes", path=name, block=block)
            if self._slices_at + o + n > end:
                raise TruncatedFileError(f"slice {i} at {o} with {n} bytes runs past the end of the payload",
                                         path=name, block=block)
        if self._slices_at > end:
            raise TruncatedFileError("EBM runs past the end of the payload", path=name, block=block)
        self._ebm: FrozenBitMap64 | None = None
        self._ebm_dense = False   # EBM is exactly [0, len(EBM)): no null rows
        self._slices: list[FrozenBitMap64 | None] = [None] * s
        # slice i ⊆ EBM is known (EBM dense and the slice's largest row below len(EBM)); then the final AND
        # with the EBM of `gt` is the identity and is skipped. Java writers never set a bit of a null row, but
        # the check keeps answers equal to Java's on any file.
        self._inside: list[bool] = [False] * s
        self._planes: _Planes | None = None
        self._planes_done = False
        self._cum: np.ndarray | None = None
        self._counts_state = "idle"   # idle → running → done
        self.nbytes_cached = 0

    def _read(self, offset: int, length: int, block: str) -> bytes:
        try:
            return self._source.read(offset, length)
        except TruncatedFileError as exc:
            raise TruncatedFileError(exc.reason, path=self._source.name, block=block, offset=offset) from None

    def ebm(self) -> FrozenBitMap64:
        """The cached existence bitmap (immutable)."""
        e = self._ebm
        if e is None:
            with self._lock:
                if self._ebm is None:
                    block = "range-bitmap existence bitmap"
                    data = self._read(self._ebm_at, self._ebm_len, block)
                    e = decode_bitmap(data, path=self._source.name, block=block)
                    n = len(e)
                    self._ebm_dense = n == 0 or (e.min() == 0 and e.max() == n - 1)
                    self._ebm = e
                    self.nbytes_cached += self._ebm_len
                e = self._ebm
        return e

    def slices(self, begin: int, end: int) -> list[FrozenBitMap64]:
        """Cached slices begin..end-1, loading the missing ones with one contiguous read."""
        out = self._slices[begin:end]
        if all(x is not None for x in out):
            return out  # type: ignore[return-value]  # no None: checked
        ebm = self.ebm()
        with self._lock:
            missing = [i for i in range(begin, end) if self._slices[i] is None]
            if missing:
                lo = min(self._offsets[i] for i in missing)
                hi = max(self._offsets[i] + self._lengths[i] for i in missing)
                data = self._read(self._slices_at + lo, hi - lo, f"range-bitmap slice {missing[0]}")
                n = len(ebm)
                for i in missing:
                    o = self._offsets[i] - lo
                    sl = decode_bitmap(data[o:o + self._lengths[i]], path=self._source.name,
                                       block=f"range-bitmap slice {i}")
                    self._inside[i] = self._ebm_dense and (not sl or sl.max() < n)
                    self._slices[i] = sl
                    self.nbytes_cached += self._lengths[i]
            return self._slices[begin:end]  # type: ignore[return-value]  # no None: all read above

    def _within_ebm(self, begin: int) -> bool:
        """Slices begin..s-1 are known to hold only non-null rows (False when one is not loaded yet)."""
        return all(self._inside[begin:])

    @staticmethod
    def _start(code: int) -> int:
        return (~code & -(~code)).bit_length() - 1

    def planes(self) -> _Planes | None:
        """The slices and EBM as dense word planes when the slices are mostly bitset containers (rows in
        random order), else None; built once, after the roaring slices (which validate the bytes)."""
        if self._planes_done:
            return self._planes
        sls = self.slices(0, self.slice_count)
        ebm = self.ebm()
        with self._lock:
            if not self._planes_done:
                self._planes = self._build_planes(sls, ebm)
                if self._planes is not None:
                    self.nbytes_cached += self._planes.nbytes
                self._planes_done = True
        return self._planes

    def _build_planes(self, sls: list[FrozenBitMap64], ebm: FrozenBitMap64) -> _Planes | None:
        if not self._planes_allowed or not ebm or not sls:
            return None
        nwords = planes_mod.word_count(ebm.max() + 1)
        if sum(self._lengths) < PLANES_MIN_FILL * len(sls) * nwords * 8:
            return None   # sparse or run-length slices: roaring is smaller and as fast
        try:
            # slices re-serialized by CRoaring: validated, and any row past the EBM's last one is refused
            words = [planes_mod.words_from_bitmap(sl, nwords) for sl in (ebm, *sls)]
        except ValueError:
            return None   # a slice holds rows past the EBM's last one: roaring keeps Java's answers
        return _Planes(words[0], words[1:])

    def code_counts(self) -> np.ndarray | None:
        """Cumulative non-null row counts by code (cum[k] = rows with code < k), which answer a count of any
        code range with two look-ups; None until built. The first call starts building them (and the planes
        they come from) on a background thread and never waits; a BSI without planes never gets them (its
        roaring sweeps are cheap)."""
        if self._counts_state != "idle":
            return self._cum
        with self._lock:
            if self._counts_state != "idle":
                return self._cum
            self._counts_state = "running"
        if COUNTS_IN_BACKGROUND:
            _background().submit(self._compute_counts)
        else:
            self._compute_counts()
        return self._cum

    def _compute_counts(self) -> None:
        try:
            pl = self.planes()
            if pl is not None:
                cum = _cumulative_code_counts(pl)
                with self._lock:
                    self._cum = cum
                    self.nbytes_cached += cum.nbytes
        except Exception:   # never fatal (a corrupt slice is reported by the query that reads it)
            pass
        finally:
            self._counts_state = "done"

    # -- operations (spec 2.5); every result is a fresh mutable BitMap64
    def ebm_copy(self) -> BitMap64:
        return clone(self.ebm())

    def eq(self, code: int) -> BitMap64:
        ebm = self.ebm()
        if not ebm:
            return BitMap64()
        sls = self.slices(0, self.slice_count)
        state = clone(ebm)
        for i in range(len(sls)):
            if (code >> i) & 1:
                state &= sls[i]
            else:
                state -= sls[i]
            if not state:
                break
        return state

    def gt(self, code: int) -> BitMap64:
        """Rows with code > `code` (code < 0: every non-null row)."""
        if code < 0:
            return self.ebm_copy()
        return self._answer(_gt_sweep, code, self._start(code), count=False)

    def gt_count(self, code: int) -> int:
        """len(gt(code)), without building a bitmap where the planes answer."""
        if code < 0:
            return len(self.ebm())
        cum = self.code_counts()
        if cum is not None:
            return int(cum[-1] - cum[min(code + 1, len(cum) - 1)])
        return self._answer(_gt_sweep, code, self._start(code), count=True)

    def between(self, first: int, last: int) -> BitMap64:
        """Rows with first <= code <= last (0 <= first <= last)."""
        if first == 0:
            return self._answer(_le_sweep, last, None, count=False)
        return self._answer(_between_sweep, (first - 1, last), 0, count=False)

    def between_count(self, first: int, last: int) -> int:
        """len(between(first, last)), without building a bitmap where the planes answer."""
        cum = self.code_counts()
        if cum is not None:
            top = len(cum) - 1
            return int(cum[min(last + 1, top)] - cum[min(first, top)])
        if first == 0:
            return self._answer(_le_sweep, last, None, count=True)
        return self._answer(_between_sweep, (first - 1, last), 0, count=True)

    @overload
    def _answer(self, sweep: Sweep, arg: object, begin: int | None, *, count: Literal[False]) -> BitMap64: ...
    @overload
    def _answer(self, sweep: Sweep, arg: object, begin: int | None, *, count: Literal[True]) -> int: ...

    def _answer(self, sweep: Sweep, arg: object, begin: int | None, *, count: bool) -> BitMap64 | int:
        """Run a sweep over the planes (a count is their popcount; a dense result converts at copy speed)
        or over the roaring slices (sparse slices, or a sparse result, which converts slowly from words).
        `begin`: the lowest slice the sweep's result may hold rows from, None when it is inside the EBM."""
        ebm = self.ebm()
        if not ebm:
            return 0 if count else BitMap64()
        pl = self.planes()
        if pl is not None:
            and_ebm = begin is not None and not self._within_ebm(begin)
            parts = _split(len(pl.ebm))
            if len(parts) == 1:
                states = [_plane_part(sweep, pl, arg, and_ebm, 0, len(pl.ebm))]
            else:   # numpy releases the GIL: the word ranges sweep on all cores at once
                states = map_parts(lambda ab: _plane_part(sweep, pl, arg, and_ebm, *ab), parts)
            n = sum(c for _, c in states)
            if count:
                return n
            if not n:
                return BitMap64()
            if n * DENSE_RESULT >= len(pl.ebm) * 64:
                words = states[0][0] if len(states) == 1 else np.concatenate(
                    [w if w is not None else np.zeros(b - a, np.uint64) for (w, _), (a, b) in zip(states, parts)])
                assert words is not None   # n > 0: a single part has rows
                return planes_mod.bitmap_from_words(words)
        state = sweep(self.slices(0, self.slice_count), ebm, arg, _ROARING_OPS)
        if state is None:
            return 0 if count else BitMap64()
        if begin is None or self._within_ebm(begin):
            return len(state) if count else state
        return state.intersection_cardinality(ebm) if count else _and(state, ebm)

    def code_of_row(self, row: int) -> int | None:
        """Code of one row, None when it is null (Paimon's `get`)."""
        if row not in self.ebm():
            return None
        value = 0
        for i, sl in enumerate(self.slices(0, self.slice_count)):
            if row in sl:
                value |= 1 << i
        return value

    def top_k(self, k: int, found: BitMap64 | None, strict: bool, *, largest: bool) -> BitMap64:
        """O'Neil & Quass algorithm 4.1: the k rows with the largest (or smallest) codes among found ∩ EBM."""
        if k < 0:
            raise ValueError(f"k cannot be negative, got {k}")
        if k == 0 or (found is not None and not found):
            return BitMap64()
        ebm = self.ebm()
        e = clone(ebm)
        if found is not None:
            e &= found
        if len(e) <= k:
            return e
        g = BitMap64()
        s = self.slice_count
        sls = self.slices(0, s)
        for i in range(s - 1, -1, -1):
            sl = sls[i]
            pick = (e & sl) if largest else (e - sl)
            x = g | pick
            n = len(x)
            if n > k:
                e = pick
            elif n < k:
                g = x
                e -= pick
            else:
                e = pick
                break
        f = g | e
        if not strict:
            return f
        extra = len(f) - k
        if extra > 0:
            f -= first_n(e, extra)
        return f


# ---------------------------------------------------------------- sweeps

# Build dense planes when the slices' bytes fill at least this share of the planes (random row order gives
# about 1: every slice is bitset containers, as large as its planes; so planes add at most a third of the
# slices' bytes). A result converts from words when at least 1/DENSE_RESULT of its rows are set (then most
# containers are bitsets, copied as they are).
PLANES_MIN_FILL = 0.75
DENSE_RESULT = 16
# Cumulative code counts (BitSliceIndex.code_counts) are computed on a background thread; tests set False.
COUNTS_IN_BACKGROUND = True


class _Ops:
    """In-place operations a sweep needs, for one representation (`&=` and `|=` work on both as they are)."""

    def __init__(self, copy: Callable[[Any], Any], andnot: Callable[[Any, Any], None],
                 empty: Callable[[Any], bool]) -> None:
        self.copy, self.andnot, self.empty = copy, andnot, empty


def _roaring_andnot(a: BitMap64, b: FrozenBitMap64) -> None:
    a -= b


def _plane_andnot(a: np.ndarray, b: np.ndarray) -> None:
    np.bitwise_and(a, np.bitwise_not(b), out=a)


_ROARING_OPS = _Ops(lambda x: clone(x), _roaring_andnot, lambda x: not x)
# an emptiness test costs a pass over the words: the planes sweep never stops early
_PLANE_OPS = _Ops(lambda x: x.copy(), _plane_andnot, lambda x: False)

Sweep = Callable[[Sequence[Any], Any, Any, _Ops], Any]


def _gt_sweep(sls: Sequence[Any], ebm: Any, code: Any, ops: _Ops) -> Any:
    """Rows whose code is > `code` (code >= 0), before the AND with the EBM; None = no row (O'Neil's
    algorithm: the trailing ones of `code` AND into an empty state, so the sweep starts above them)."""
    s = len(sls)
    start = BitSliceIndex._start(code)
    if start >= s:
        return None
    state = ops.copy(sls[start])
    for i in range(start + 1, s):
        if (code >> i) & 1:
            state &= sls[i]
        else:
            state |= sls[i]
    return state


def _le_sweep(sls: Sequence[Any], ebm: Any, last: Any, ops: _Ops) -> Any:
    """Rows with code <= `last`: the EBM minus `gt(last)` (already inside the EBM)."""
    out = ops.copy(ebm)
    above = _gt_sweep(sls, ebm, last, ops)
    if above is not None:
        ops.andnot(out, above)
    return out


def _between_sweep(sls: Sequence[Any], ebm: Any, bounds: Any, ops: _Ops) -> Any:
    """Rows with low < code <= high (0 <= low < high), EBM not applied; None = no row.

    One sweep: below the highest bit d where low and high differ, the two `gt` states advance together
    (each slice read once); above d both states see the same operation with the same slice, and
    (A & S) - (B & S) = (A - B) & S, (A | S) - (B | S) = (A - B) - S, so one state D = A - B continues.
    """
    low, high = bounds
    d = (low ^ high).bit_length() - 1
    a = b = None
    for i in range(d + 1):
        sl = sls[i]
        if a is not None:
            if (low >> i) & 1:
                a &= sl
            else:
                a |= sl
        elif not (low >> i) & 1:
            a = ops.copy(sl)
        if b is not None:
            if (high >> i) & 1:
                b &= sl
            else:
                b |= sl
        elif not (high >> i) & 1:
            b = ops.copy(sl)
    if a is None:   # cannot happen: bit d of low is 0
        return None
    if b is not None:
        ops.andnot(a, b)
    for i in range(d + 1, len(sls)):
        if ops.empty(a):
            return None
        if (high >> i) & 1:
            a &= sls[i]
        else:
            ops.andnot(a, sls[i])
    return a


def _plane_part(sweep: Sweep, pl: _Planes, arg: object, and_ebm: bool, a: int, b: int
                ) -> tuple[np.ndarray | None, int]:
    """One word range of a planes sweep: its state (None = no row) and popcount."""
    state = sweep([sl[a:b] for sl in pl.slices], pl.ebm[a:b], arg, _PLANE_OPS)
    if state is None:
        return None, 0
    if and_ebm:
        state &= pl.ebm[a:b]
    return state, planes_mod.count(state)


# A sweep over at least this many words per part is split across threads (below, thread hand-off costs more
# than it saves); parts are whole containers.
PARALLEL_MIN_WORDS = 32 * planes_mod.WORDS
_BACKGROUND: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _background() -> ThreadPoolExecutor:
    global _BACKGROUND
    with _POOL_LOCK:
        if _BACKGROUND is None:
            _BACKGROUND = ThreadPoolExecutor(1, thread_name_prefix="bgix-bsi-counts")
        return _BACKGROUND


def _cumulative_code_counts(pl: _Planes) -> np.ndarray:
    """cum[k] = rows of the EBM whose code is < k; codes rebuilt from the planes a block of words at a time,
    so the temporaries stay small (about 1M rows each)."""
    counts = np.zeros(0, dtype=np.int64)
    step = 16 * planes_mod.WORDS
    nwords = len(pl.ebm)
    codes = np.empty(step * 64, dtype=np.uint32)
    bit = np.empty(step * 64, dtype=np.uint32)
    for a in range(0, nwords, step):
        b = min(a + step, nwords)
        n = (b - a) * 64
        c = codes[:n]
        c.fill(0)
        for i, w in enumerate(pl.slices):
            np.copyto(bit[:n], np.unpackbits(w[a:b].view(np.uint8), bitorder="little"))
            np.left_shift(bit[:n], i, out=bit[:n])
            np.bitwise_or(c, bit[:n], out=c)
        valid = np.unpackbits(pl.ebm[a:b].view(np.uint8), bitorder="little").view(bool)
        part = np.bincount(c[valid])
        if len(part) > len(counts):
            counts = np.concatenate([counts, np.zeros(len(part) - len(counts), dtype=np.int64)])
        counts[:len(part)] += part
    cum = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=cum[1:])
    return cum


def _split(nwords: int) -> list[tuple[int, int]]:
    k = max(1, min(THREADS, nwords // PARALLEL_MIN_WORDS))
    step = -(-nwords // k // planes_mod.WORDS) * planes_mod.WORDS
    return [(a, min(a + step, nwords)) for a in range(0, nwords, step)]


class _Planes:
    """EBM and slices as word planes (planes.py)."""

    def __init__(self, ebm: np.ndarray, slices: list[np.ndarray]) -> None:
        self.ebm, self.slices = ebm, slices
        self.nbytes = ebm.nbytes * (1 + len(slices))


def _and(a: BitMap64, b: FrozenBitMap64) -> BitMap64:
    a &= b
    return a


_EMPTY = BitMap64()


def clone(bm: BitMap64 | FrozenBitMap64) -> BitMap64:
    """A fresh mutable copy (a union with the empty map is several times faster than BitMap64.copy on dense maps)."""
    return _EMPTY | bm


def first_n(bm: BitMap64 | FrozenBitMap64, n: int) -> BitMap64:
    """The n smallest ids of `bm` (RoaringBitmap.limit)."""
    if n <= 0:
        return BitMap64()
    if n >= len(bm):
        return clone(bm)
    out = clone(bm)
    out.remove_range(bm[n], (1 << 64) - 1)
    out.discard((1 << 64) - 1)
    return out
