"""FM global index writer: rows in row-id order → Paimon FM-index V1 files, byte-identical to pypaimon-rust 0.4's
`create_global_index(..., index_type => 'fm')` for the same rows and options (tests/unit/index_format/fm).

The text of a partition is every row's UTF-8 bytes (shifted past the two reserved symbols) followed by a separator,
then one terminator; symbols are densified to the bytes present. The suffix array comes from libdivsufsort
(pydivsufsort): with a unique smallest terminator at the end every correct suffix sort gives the same order, so
the bytes match Rust's own SA-IS. Everything else is numpy, and the blocks' LZ4 a numba-compiled loop
(lz4_block); partitions are encoded and compressed on index_format.parallel's threads (both release the GIL) and
placed in order. Imports numpy/pyarrow/pydivsufsort and
index_format.{fm,errors,storage,types,written_files}.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from index_format.errors import InvalidOptionError
from index_format.fm.fm_format import (
    BLOCK_BITS,
    BLOCK_WORDS,
    FIRST_BYTE_SYMBOL,
    QUAD_BLOCK_VALUES,
    SEPARATOR,
    VALUE_BLOCK_INTS,
    BlockInfo,
    IndexMeta,
    PartitionMeta,
    compress,
    crc,
    encode_container_footer,
    encode_index_meta,
    encode_partition_footer,
    levels_for,
)
from index_format.parallel import Pending, submit
from index_format.storage import Storage
from index_format.written_files import WriterInputError, WrittenFile

if TYPE_CHECKING:
    from index_format.options import IndexOptions

__all__ = ["FMOptions", "fm_options", "write_fm_bytes", "write_fm_files"]

PARTITION_SIZE = "fm-index.partition-size"
PARTITION_ROW_COUNT = "fm-index.partition-row-count"
SA_SAMPLE_RATE = "fm-index.sa-sample-rate"
COMPRESSION = "fm-index.compression"
COMPRESSION_LEVEL = "fm-index.compression-level"
# read-side keys Paimon accepts in the same namespace; they do not change the bytes written
_READ_KEYS = ("fm-index.read-cache-size", "fm-index.demand-page-size", "fm-index.locate-cost-ratio")


@dataclass(frozen=True, slots=True)
class FMOptions:
    """Paimon's FM write options and their defaults (16 MiB partitions of at most 100,000 rows, every 32nd
    suffix sampled, lz4 level 1)."""

    partition_size: int = 16 << 20
    partition_row_count: int = 100_000
    sample_rate: int = 32
    compression: str = "lz4"
    compression_level: int = 1


def fm_options(options: FMOptions | IndexOptions | Mapping[str, object] | str | None) -> FMOptions:
    """FMOptions from Paimon's `fm-index.*` keys (a mapping or "k=v,k=v"; other keys are ignored, as they belong
    to other families or to the build) or from an IndexOptions' fm fields (what a build passes).

    Raises:
        InvalidOptionError: a value that does not parse or lies outside Paimon's range.
    """
    if isinstance(options, FMOptions):
        return options
    if options is None:
        return FMOptions()
    raw: Mapping[str, object]
    if isinstance(options, str):
        raw = dict(p.split("=", 1) for p in options.split(",") if "=" in p)
        raw = {k.strip(): v.strip() for k, v in raw.items()}
    elif isinstance(options, Mapping):
        raw = options
    else:   # an IndexOptions (index_format.options): its fm-index options, validated there
        from index_format.options import IndexOptions
        if not isinstance(options, IndexOptions):
            raise InvalidOptionError(f"fm options must be a mapping, a 'k=v,k=v' string or IndexOptions, "
                                     f"not {type(options).__name__}")
        return FMOptions(options.fm_partition_size, options.fm_partition_row_count, options.fm_sa_sample_rate,
                         options.fm_compression, options.fm_compression_level)
    from index_format.options import parse_size
    d = FMOptions()

    def get(key: str, default: int, parse: Callable[[str], int] = int) -> int:
        if key not in raw:
            return default
        try:
            return parse(str(raw[key]).strip())
        except (ValueError, InvalidOptionError):
            raise InvalidOptionError(f"option {key!r}: cannot parse {raw[key]!r}") from None

    size = get(PARTITION_SIZE, d.partition_size, parse_size)
    rows = get(PARTITION_ROW_COUNT, d.partition_row_count)
    rate = get(SA_SAMPLE_RATE, d.sample_rate)
    codec = str(raw.get(COMPRESSION, d.compression)).strip().lower()
    level = get(COMPRESSION_LEVEL, d.compression_level)
    for key in raw:
        if key.startswith("fm-index.") and key not in (PARTITION_SIZE, PARTITION_ROW_COUNT, SA_SAMPLE_RATE,
                                                       COMPRESSION, COMPRESSION_LEVEL, *_READ_KEYS):
            raise InvalidOptionError(f"unknown option {key!r}")
    if not 2 <= size < 2**31 - 1:
        raise InvalidOptionError(f"option {PARTITION_SIZE!r} must be in [2, 2^31 - 1), got {size}")
    if not 1 <= rows <= 2**31 - 1:
        raise InvalidOptionError(f"option {PARTITION_ROW_COUNT!r} must be in [1, 2^31 - 1], got {rows}")
    if not 1 <= rate <= 1024 or rate & (rate - 1):
        raise InvalidOptionError(f"option {SA_SAMPLE_RATE!r} must be a power of two in [1, 1024], got {rate}")
    if codec not in ("none", "lz4", "zstd"):
        raise InvalidOptionError(f"option {COMPRESSION!r} must be none, lz4 or zstd (lzo is read-only), "
                                 f"got {codec!r}")
    return FMOptions(size, rows, rate, codec, level)


# ---------------------------------------------------------------- vectors → blocks

class _Out:
    """The bytes of one file being built and the absolute offset of the next block."""

    def __init__(self, base: int) -> None:
        self.parts: list[bytes] = []
        self.offset = base

    def block(self, body: bytes, opts: FMOptions) -> BlockInfo:
        stored, codec = compress(body, opts.compression, opts.compression_level)
        info = BlockInfo(self.offset, len(stored), len(body), codec, crc(stored, codec))
        self.parts.append(stored)
        self.offset += len(stored)
        return info

    def raw(self, data: bytes) -> None:
        self.parts.append(data)
        self.offset += len(data)


def _u32(values: Sequence[int] | np.ndarray) -> bytes:
    return np.asarray(values, dtype=">u4").tobytes()


def _group_prefixes(per_word: np.ndarray) -> np.ndarray:
    """Counts before each group of 64 words, then the total ((words + 63) // 64 + 1 rows)."""
    csum = np.concatenate([np.zeros((1, *per_word.shape[1:]), dtype=np.int64), np.cumsum(per_word, axis=0)])
    idx = np.minimum(np.arange(0, (len(per_word) + 63) // 64 + 1) * 64, len(per_word))
    return np.asarray(csum[idx])


_LANES = 0x5555_5555_5555_5555


# A vector before its blocks are stored: its head (lengths, totals, block count), then per block the directory
# bytes that precede the block's BlockInfo and the block's uncompressed body.
_Vector = tuple[bytes, list[tuple[bytes, bytes]]]


def _quad_words(digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(words, per_word): 2-bit digits packed 32 per little-endian u64 word, and each word's count of each digit
    (padding lanes not counted)."""
    native = _native()
    if native is not None:
        words, per_word = native.quad_words(digits)
        return words, per_word
    n = len(digits)
    nwords = -(-n // 32)
    padded = np.zeros(nwords * 32, dtype=np.uint8)
    padded[:n] = digits
    b = padded.reshape(-1, 4)
    packed = (b[:, 0] | (b[:, 1] << 2) | (b[:, 2] << 4) | (b[:, 3] << 6)).astype(np.uint8)
    words = packed.view("<u8")
    per_word = np.empty((nwords, 4), dtype=np.int64)
    for digit in range(4):   # popcount of the 2-bit lanes equal to `digit`
        diff = words ^ np.uint64(digit * _LANES)
        per_word[:, digit] = np.bitwise_count(~(diff | (diff >> np.uint64(1))) & np.uint64(_LANES))
    per_word[-1, 0] -= nwords * 32 - n   # padding lanes are zeros: not values
    return words, per_word


def _quad_vector(digits: np.ndarray) -> _Vector:
    """One wavelet level (2-bit digits, 32 per little-endian u64 word) as blocks of 4096 words."""
    n = len(digits)
    words, per_word = _quad_words(digits)
    nwords = len(words)
    totals = per_word.sum(axis=0)
    items = []
    before = np.zeros(4, dtype=np.int64)
    for w0 in range(0, nwords, BLOCK_WORDS):
        w1 = min(nwords, w0 + BLOCK_WORDS)
        pw = per_word[w0:w1]
        body = (_u32([w1 - w0, (w1 - w0 + 63) // 64 + 1]) + _u32(_group_prefixes(pw).ravel())
                + words[w0:w1].astype(">u8").tobytes())
        counts = pw.sum(axis=0)
        first = w0 * 32
        items.append((_u32([first, min(QUAD_BLOCK_VALUES, n - first), *before.tolist(), *counts.tolist()]), body))
        before += counts
    return _u32([n, *totals.tolist(), len(items)]), items


def _bit_vector(bits: np.ndarray) -> _Vector:
    """A bit vector (bit i in word i // 64, bit i % 64) as blocks of 4096 words."""
    n = len(bits)
    nwords = -(-n // 64)
    packed = np.zeros(nwords * 8, dtype=np.uint8)
    packed[:-(-n // 8)] = np.packbits(bits, bitorder="little")
    words = packed.view("<u8")
    per_word = np.bitwise_count(words).astype(np.int64)
    items = []
    before = 0
    for w0 in range(0, nwords, BLOCK_WORDS):
        w1 = min(nwords, w0 + BLOCK_WORDS)
        pw = per_word[w0:w1]
        body = (_u32([w1 - w0, (w1 - w0 + 63) // 64 + 1]) + _u32(_group_prefixes(pw))
                + words[w0:w1].astype(">u8").tobytes())
        ones = int(pw.sum())
        first = w0 * 64
        items.append((_u32([first, min(BLOCK_BITS, n - first), before, ones]), body))
        before += ones
    return _u32([n, before, len(items)]), items


def _int_vector(values: np.ndarray) -> _Vector:
    n = len(values)
    items = [(_u32([v0, min(n, v0 + VALUE_BLOCK_INTS) - v0]), _u32(values[v0:v0 + VALUE_BLOCK_INTS]))
             for v0 in range(0, n, VALUE_BLOCK_INTS)]
    return _u32([n, len(items)]), items


def _suffix_array(dense: np.ndarray, alphabet: int) -> np.ndarray:
    from pydivsufsort import divsufsort
    sa = divsufsort(dense.astype(np.uint8) if alphabet <= 256 else dense.astype(np.uint16))
    return np.asarray(sa)   # int32 below 2^31 symbols: half the memory traffic of int64


def _native() -> ModuleType | None:
    """The numba-compiled loops (wavelet_native), or None without numba or with BGIX_FM_NATIVE=numpy."""
    if not _NATIVE:
        with _NATIVE_LOCK:   # set once loaded: a thread arriving meanwhile waits rather than take the numpy path
            if not _NATIVE:
                module: ModuleType | None = None
                if os.environ.get("BGIX_FM_NATIVE") != "numpy":
                    try:
                        from index_format.fm import wavelet_native as module
                    except ImportError:   # numba is not installed
                        pass
                _NATIVE.append(module)
    return _NATIVE[0]


_NATIVE: list[ModuleType | None] = []
_NATIVE_LOCK = threading.Lock()


def _bwt_samples(dense: np.ndarray, sa: np.ndarray, rate: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bwt, sampled, samples) of a partition: its BWT, which suffix array entries are sampled (multiples of the
    rate, a power of two), and their values."""
    native = _native()
    if native is not None:
        bwt, sampled, samples = native.bwt_samples(dense, sa, rate)
        return bwt, sampled, samples
    sampled = (sa & (rate - 1)) == 0
    return dense[sa - 1], sampled, sa[sampled]


def _wavelet_digits(bwt: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """(digits[levels, n], counts[levels, 4]): each quad wavelet level's 2-bit digits, most significant first,
    the symbols of a level ordered stably by the digits of the levels above it."""
    native = _native()
    if native is not None:
        digits, counts = native.wavelet_digits(bwt, levels)
        return digits, counts
    out = np.empty((levels, len(bwt)), dtype=np.uint8)
    current = bwt
    for level in range(levels):
        out[level] = (current >> ((levels - level - 1) * 2)) & 3
        if level + 1 < levels:
            # stable partition by digit (one radix pass): four masked gathers beat an argsort
            current = np.concatenate([current[out[level] == d] for d in range(4)])
    counts = np.stack([np.bincount(row, minlength=4) for row in out])
    return out, counts


@dataclass(slots=True)
class _Encoded:
    """A partition's directory pieces and blocks, before any is compressed or placed (numpy's part)."""

    rows: int
    text_length: int
    head: bytes                             # the directory up to the first vector
    vectors: list[tuple[bytes, _Vector]]    # (directory bytes before the vector, the vector), in block order


def _encode(sym: np.ndarray, nulls: np.ndarray, opts: FMOptions) -> _Encoded:
    """The numpy half of a partition (`sym`: its text as raw symbols, terminator included): densify, suffix
    array, BWT, samples, wavelet levels, bit vectors. Releases the GIL most of the time."""
    n = len(sym)
    counts = np.bincount(sym, minlength=FIRST_BYTE_SYMBOL + 256)
    present = np.flatnonzero(counts[FIRST_BYTE_SYMBOL:])
    alphabet = FIRST_BYTE_SYMBOL + len(present)
    b2s = np.full(256, -1, dtype=np.int64)
    b2s[present] = np.arange(FIRST_BYTE_SYMBOL, alphabet)
    lut = np.concatenate([np.arange(FIRST_BYTE_SYMBOL), b2s]).astype(np.uint16)
    dense = lut[sym]
    sa = _suffix_array(dense, alphabet)
    levels = levels_for(alphabet)
    bwt, sampled, samples = _bwt_samples(dense, sa, opts.sample_rate)
    del sa
    cum = np.concatenate([[0], np.cumsum(counts[np.concatenate([np.arange(FIRST_BYTE_SYMBOL),
                                                                present + FIRST_BYTE_SYMBOL])])])
    digits, dcounts = _wavelet_digits(bwt, levels)
    vectors: list[tuple[bytes, _Vector]] = [
        (_u32(np.concatenate([[0], np.cumsum(dcounts[level])[:3]])), _quad_vector(digits[level]))
        for level in range(levels)]
    vectors.append((b"", _bit_vector(sampled)))
    vectors.append((b"", _int_vector(samples)))
    vectors.append((b"", _bit_vector(nulls)))
    vectors.append((b"", _bit_vector(dense == SEPARATOR)))
    head = b"".join([_u32([len(nulls), n, opts.sample_rate, levels, alphabet, BLOCK_WORDS]),
                     np.asarray(b2s, dtype=">i4").tobytes(), _u32(cum)])
    return _Encoded(len(nulls), n, head, vectors)


# A block compressed, before it is placed: (stored bytes, codec id, CRC, uncompressed length).
_Stored = tuple[bytes, int, int, int]


@dataclass(slots=True)
class _Packed:
    """A partition's blocks compressed (where they go is decided when the partitions are placed in order)."""

    rows: int
    text_length: int
    head: bytes
    vectors: list[tuple[bytes, bytes, list[tuple[bytes, _Stored]]]]   # (before, vector head, (meta, block))


def _store(body: bytes, opts: FMOptions) -> _Stored:
    stored, codec = compress(body, opts.compression, opts.compression_level)
    return stored, codec, crc(stored, codec), len(body)


def _pack(enc: _Encoded, opts: FMOptions) -> _Packed:
    """Compress every payload block of a partition (numba's LZ4 and zstd release the GIL: partitions pack in
    parallel)."""
    return _Packed(enc.rows, enc.text_length, enc.head,
                   [(before, head, [(meta, _store(body, opts)) for meta, body in items])
                    for before, (head, items) in enc.vectors])


def _place(packed: _Packed, opts: FMOptions, out: _Out, first_row_id: int) -> PartitionMeta:
    """Place a packed partition's blocks, then its directory (which names their offsets) and its footer."""
    start = out.offset
    directory = [packed.head]
    for before, head, items in packed.vectors:
        directory += [before, head]
        for meta, (stored, codec, checksum, length) in items:
            info = BlockInfo(out.offset, len(stored), length, codec, checksum)
            out.raw(stored)
            directory += [meta, info.pack()]
    info = out.block(b"".join(directory), opts)
    out.raw(encode_partition_footer(info, first_row_id, packed.rows, packed.text_length, opts.sample_rate))
    return PartitionMeta(start, out.offset, first_row_id, packed.rows)


def _cuts(enc: np.ndarray, opts: FMOptions) -> list[tuple[int, int]]:
    """Rust's partition rule: a row closes the open partition when it holds partition-row-count rows, or when
    the row's symbols and a terminator would pass partition-size."""
    cum = np.concatenate([[0], np.cumsum(enc)])
    cuts = []
    a, n = 0, len(enc)
    while a < n:
        # first j > a with cum[j + 1] - cum[a] > size - 1
        j = int(np.searchsorted(cum, cum[a] + opts.partition_size - 1, side="right")) - 1
        b = min(max(j, a + 1), a + opts.partition_row_count, n)
        cuts.append((a, b))
        a = b
    return cuts


def _large(values: pa.Array | pa.ChunkedArray | Sequence[str | bytes | None]) -> pa.Array:
    """`values` as one large_string or large_binary array (raw bytes, not necessarily UTF-8, stored as they are)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        arr = values
    elif any(isinstance(v, bytes) for v in values):
        arr = pa.array([v.encode("utf-8") if isinstance(v, str) else v for v in values], pa.large_binary())
    else:
        arr = pa.array(values, pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_large_string(arr.type) and not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary() if pa.types.is_binary(arr.type) else pa.large_string())
    return arr


def _layout(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(value offsets relative to the first, value bytes) of a large_string/large_binary array."""
    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    return offs - offs[0], data[offs[0]:offs[-1]]


def _symbols(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(symbols, nulls) of one partition's rows: each value's bytes as symbols, then a separator; a terminator
    closes the text."""
    offs, body = _layout(arr)
    b = len(arr)
    total = len(body) + b + 1
    sym = np.empty(total, dtype=np.uint16)
    seps = offs[1:] + np.arange(b)
    mask = np.ones(total, dtype=bool)
    mask[seps] = False
    mask[-1] = False
    sym[mask] = body.astype(np.uint16) + FIRST_BYTE_SYMBOL
    sym[seps] = SEPARATOR
    sym[-1] = 0
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else np.zeros(b, dtype=bool)
    return sym, nulls


class FMFileStream:
    """One FM file written as its rows arrive in row order (`add`): every partition the rows so far close is
    encoded and compressed on the worker threads while the caller reads on; `finish` places the partitions in
    order and returns the file. Row i of the stream has id first_row_id + i.

    Partitions follow pypaimon-rust's rule (`_cuts`), which decides a partition's end from its own rows only: a
    partition is closed once a row past it has arrived, so the stream's cuts are those of the whole input.
    """

    def __init__(self, first_row_id: int = 0,
                 options: FMOptions | IndexOptions | Mapping[str, object] | str | None = None) -> None:
        self.opts = fm_options(options)
        self.first_row_id = first_row_id
        self.rows = 0                                    # rows added
        self._open: list[pa.Array] = []                  # rows after the last closed partition
        self._open_rows = 0
        self._open_symbols = 0
        self._parts: list[tuple[int, Pending[_Packed]]] = []   # (first row, its encoding), in row order

    def add(self, values: pa.Array | pa.ChunkedArray | Sequence[str | bytes | None]) -> None:
        """Append rows (the next ids of the stream).

        Raises:
            WriterInputError: a value longer than the partition size.
        """
        arr = _large(values)
        if len(arr) == 0:
            return
        offs, _ = _layout(arr)
        longest = int(np.diff(offs).max())
        if longest + 1 >= self.opts.partition_size:
            raise WriterInputError(f"a value exceeds {PARTITION_SIZE} ({self.opts.partition_size} encoded symbols)")
        self._open.append(arr)
        self.rows += len(arr)
        self._open_rows += len(arr)
        self._open_symbols += int(offs[-1]) + len(arr)
        # cut only once a partition must have closed: each row is gathered into one array at most twice
        if self._open_rows > self.opts.partition_row_count or self._open_symbols >= self.opts.partition_size:
            self._cut(last=False)

    def _cut(self, last: bool) -> None:
        arr = pa.concat_arrays(self._open) if len(self._open) > 1 else self._open[0]
        offs, _ = _layout(arr)
        cuts = _cuts(np.diff(offs) + 1, self.opts)
        closed = cuts if last else cuts[:-1]
        first = self.rows - len(arr)
        for a, b in closed:
            self._parts.append((first + a, submit(self._pack, arr.slice(a, b - a))))
        rest = arr.slice(closed[-1][1]) if closed else arr
        self._open = [rest] if len(rest) else []
        self._open_rows = len(rest)
        self._open_symbols = int(_layout(rest)[0][-1]) + len(rest) if len(rest) else 0

    def _pack(self, rows: pa.Array) -> _Packed:
        sym, nulls = _symbols(rows)
        return _pack(_encode(sym, nulls, self.opts), self.opts)

    def finish(self) -> tuple[bytes, bytes]:
        """(file bytes, index metadata for the manifest).

        Raises:
            WriterInputError: no rows.
        """
        if self.rows == 0:
            raise WriterInputError("an FM file needs at least one row")
        if self._open:
            self._cut(last=True)
        out = _Out(0)
        metas = [_place(pending.result(), self.opts, out, self.first_row_id + first)
                 for first, pending in self._parts]
        meta_bytes = encode_index_meta(IndexMeta(self.first_row_id, self.rows, tuple(metas)))
        info = out.block(meta_bytes, self.opts)
        out.raw(encode_container_footer(info, self.first_row_id, self.rows, len(metas)))
        return b"".join(out.parts), meta_bytes


def write_fm_bytes(values: pa.Array | Sequence[str | bytes | None], first_row_id: int = 0,
                   options: FMOptions | IndexOptions | Mapping[str, object] | str | None = None) -> tuple[bytes, bytes]:
    """One FM file of `values` (row i has id first_row_id + i): (file bytes, index metadata for the manifest).

    Raises:
        WriterInputError: no rows, or a value longer than the partition size.
    """
    stream = FMFileStream(first_row_id, options)
    stream.add(values)
    return stream.finish()


def check_string_keys(kt: object) -> None:
    """Refuse keys of a type other than STRING (a KeyType or its spelling).

    Raises:
        WriterInputError: naming the type.
    """
    from index_format.types import parse_type
    ktype = parse_type(kt) if isinstance(kt, str) else kt
    if getattr(ktype, "name", None) != "string":
        raise WriterInputError(f"an fm index needs a STRING column, not {kt}")


def write_fm_files(keys: pa.Array | np.ndarray | Sequence[object], row_ids: pa.Array | np.ndarray | Sequence[int],
                   kt: object, options: FMOptions | IndexOptions | Mapping[str, object] | str | None = None, *,
                   records_per_file: int, new_path: Callable[[], str], storage: Storage,
                   keep_rows: bool = False) -> list[WrittenFile]:
    """The FAMILIES writer: rows sorted by local row id, which must be consecutive, cut into files of
    `records_per_file` rows (pypaimon-rust: `sorted-index.records-per-range`). A file's rows are numbered from
    its first row's local id (the index metadata's first row id): give each file its own row range starting at
    local id 0, as Paimon does, by calling this once per range. `kt` must be a string type; `keep_rows` is
    accepted for the signature (an FM file's rows are all its range's rows, so no FileRows are kept).

    Raises:
        WriterInputError: non-string keys, ids that are not consecutive, lengths that differ.
    """
    from index_format.written_files import check_row_ids
    check_string_keys(kt)
    if records_per_file < 1:
        raise WriterInputError("records_per_file must be ≥ 1")
    opts = fm_options(options)
    arr = keys if isinstance(keys, (pa.Array, pa.ChunkedArray)) else pa.array(list(keys), pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    rid = check_row_ids(row_ids, len(arr))
    if len(rid) == 0:
        return []
    if np.any(np.diff(rid) != 1):
        order = np.argsort(rid, kind="stable")
        rid = rid[order]
        arr = arr.take(pa.array(order))
        if np.any(np.diff(rid) != 1):
            raise WriterInputError("an fm index needs consecutive row ids (one row per id of its range)")
    out: list[WrittenFile] = []
    for a in range(0, len(rid), records_per_file):
        b = min(len(rid), a + records_per_file)
        part = arr.slice(a, b - a)
        data, meta = write_fm_bytes(part, int(rid[a]), opts)
        path = new_path()
        storage.write_atomic(path, data)
        out.append(written_file(path, data, meta, len(part), key_bounds(part), part.null_count > 0))
    return out


def key_bounds(arr: pa.Array) -> tuple[bytes | None, bytes | None]:
    """(smallest, largest) value of `arr` as bytes, compared as bytes; (None, None) when every row is null."""
    import pyarrow.compute as pc
    if arr.null_count == len(arr):
        return None, None
    mm = pc.min_max(arr.cast(pa.large_binary()))
    return mm["min"].as_py(), mm["max"].as_py()


def written_file(path: str, data: bytes, meta: bytes, rows: int, bounds: tuple[bytes | None, bytes | None],
                 has_nulls: bool) -> WrittenFile:
    """The file's record. Its value_count is -1 (not counted): an fm file records no distinct count, nothing reads
    it, and counting the values was a tenth of a 10M-row build's CPU, on one core after the parallel part."""
    first, last = bounds
    return WrittenFile(path=path, file_size=len(data), row_count=rows, meta=meta,
                       first_key=first.decode("utf-8", "surrogateescape") if first is not None else None,
                       last_key=last.decode("utf-8", "surrogateescape") if last is not None else None,
                       has_nulls=has_nulls, value_count=-1)
