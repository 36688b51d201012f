"""The chunked dictionary of a range-bitmap payload (spec 2.3): sorted keys → dense codes and back.

Writing packs sorted keys into chunks exactly like Paimon's `ChunkedDictionary.Appender` (vectorized for
fixed-width keys). Reading decodes the chunk-header region once (head keys and head codes as Python lists,
so a lookup is a bisect) and each chunk's key block only when a probe lands in it, caching it.
"""
from __future__ import annotations

import struct
import threading
from bisect import bisect_left, bisect_right

import numpy as np
import pyarrow as pa

from index_format.errors import CorruptFileError, TruncatedFileError, UnsupportedVersionError
from index_format.layout import BE_I32, RANGE_DICT_CHUNK_TAIL, RANGE_DICT_HEADER, be_i32s
from index_format.range_bitmap.range_keys import (
    BE_DTYPE, WIDTH, Rep, fixed_key_bytes, rep_of_bytes, reps_of_fixed_block,
)
from index_format.storage import RangeSource
from index_format.types import KeyType

VERSION = 1


# ---------------------------------------------------------------- writing

def build_dictionary(kt: KeyType, ints: np.ndarray | None, strings: pa.Array | None, chunk_size: int) -> bytes:
    """Dictionary bytes for sorted distinct keys: `ints` (fixed width, Java integers) or `strings` (binary)."""
    if strings is not None:
        return _build_variable(strings, chunk_size)
    assert ints is not None
    return _build_fixed(kt, ints, chunk_size)


def _dictionary_bytes(count: int, offsets: bytes, chunks: bytes, keys: bytes) -> bytes:
    return RANGE_DICT_HEADER.pack(13, VERSION, count, len(offsets), len(chunks)) + offsets + chunks + keys


def _build_fixed(kt: KeyType, ints: np.ndarray, chunk_size: int) -> bytes:
    card = len(ints)
    if card == 0:
        return _dictionary_bytes(0, b"", b"", b"")
    width = WIDTH[kt.name]
    per_chunk = 1 + chunk_size // width          # the head key plus as many keys as fit in chunk_size bytes
    nchunks = -(-card // per_chunk)
    heads = np.arange(nchunks, dtype=np.int64) * per_chunk
    sizes = np.minimum(heads + per_chunk, card) - heads - 1
    keys_len = sizes * width
    keys_off = np.zeros(nchunks, dtype=np.int64)
    np.cumsum(keys_len[:-1], out=keys_off[1:])
    dtype = np.dtype([("version", "u1"), ("key", BE_DTYPE[width]), ("code", ">i4"), ("keys_offset", ">i4"),
                      ("size", ">i4"), ("keys_length", ">i4"), ("fixed_length", ">i4")])
    hdr = np.zeros(nchunks, dtype=dtype)
    hdr["version"] = VERSION
    hdr["key"] = ints[heads]
    hdr["code"] = heads
    hdr["keys_offset"] = keys_off
    hdr["size"] = sizes
    hdr["keys_length"] = keys_len
    hdr["fixed_length"] = width
    offsets = (np.arange(nchunks, dtype=np.int64) * dtype.itemsize).astype(">i4").tobytes()
    is_head = np.zeros(card, dtype=bool)
    is_head[heads] = True
    body = fixed_key_bytes(kt, ints[~is_head])
    return _dictionary_bytes(nchunks, offsets, hdr.tobytes(), body)


def _build_variable(strings: pa.Array, chunk_size: int) -> bytes:
    card = len(strings)
    if card == 0:
        return _dictionary_bytes(0, b"", b"", b"")
    values: list[bytes] = strings.to_pylist()
    lens = [4 + len(v) for v in values]
    offsets: list[bytes] = []
    chunks: list[bytes] = []
    blocks: list[bytes] = []
    chunks_pos = 0
    keys_pos = 0
    i = 0
    while i < card:
        head = i
        used = 0       # bytes of the keys area
        slots = 0      # bytes of the offsets area
        j = i + 1
        while j < card and lens[j] <= chunk_size - used and 4 <= chunk_size - slots:
            used += lens[j]
            slots += 4
            j += 1
        size = j - head - 1
        rel = 0
        rel_offsets = []
        parts = []
        for v in values[head + 1:j]:
            rel_offsets.append(rel)
            parts.append(BE_I32.pack(len(v)))
            parts.append(v)
            rel += 4 + len(v)
        block = be_i32s(size).pack(*rel_offsets) + b"".join(parts)
        hv = values[head]
        chunk = (bytes((VERSION,)) + BE_I32.pack(len(hv)) + hv
                 + RANGE_DICT_CHUNK_TAIL.pack(head, keys_pos, size, 4 * size, rel))
        offsets.append(BE_I32.pack(chunks_pos))
        chunks.append(chunk)
        blocks.append(block)
        chunks_pos += len(chunk)
        keys_pos += len(block)
        i = j
    return _dictionary_bytes(len(chunks), b"".join(offsets), b"".join(chunks), b"".join(blocks))


# ---------------------------------------------------------------- reading

class ChunkedDictionary:
    """Lazy reader of one dictionary at `offset` in `source` (`length` bytes)."""

    def __init__(self, source: RangeSource, kt: KeyType, offset: int, length: int) -> None:
        self._source = source
        self._kt = kt
        self._offset = offset
        self._length = length
        self._lock = threading.Lock()
        self._width = WIDTH.get(kt.name)
        head = self._read(offset, 17, "range-bitmap dictionary header")
        hlen, version, count, offs_len, chunks_len = RANGE_DICT_HEADER.unpack(head)
        if version > VERSION:
            raise UnsupportedVersionError(f"range-bitmap dictionary version {version} (this library reads 1)",
                                          path=source.name, block="range-bitmap dictionary header")
        if hlen != 13 or count < 0 or offs_len != 4 * count or chunks_len < 0:
            self._corrupt("range-bitmap dictionary header",
                          f"header length {hlen}, {count} chunks, offsets {offs_len} bytes, chunks {chunks_len} bytes")
        self.chunk_count: int = count
        self._offs_len = offs_len
        self._chunks_len = chunks_len
        self._body = offset + 4 + hlen
        self._keys_base = self._body + offs_len + chunks_len
        if self._keys_base > offset + length:
            self._corrupt("range-bitmap dictionary header", "chunk headers run past the dictionary")
        self._heads: list[Rep] | None = None
        self._codes: list[int] = []
        self._meta: list[tuple[int, int, int, int]] = []   # keysOffset, size, offsetsLength, keysLength
        self._blocks: dict[int, list[Rep]] = {}
        self.nbytes_cached = 0

    # -- errors and reads
    def _corrupt(self, block: str, reason: str) -> None:
        raise CorruptFileError(reason, path=self._source.name, block=block)

    def _read(self, offset: int, length: int, block: str) -> bytes:
        try:
            return self._source.read(offset, length)
        except TruncatedFileError as exc:
            raise TruncatedFileError(exc.reason, path=self._source.name, block=block, offset=offset) from None

    # -- chunk headers
    def _load_headers(self) -> None:
        if self._heads is not None:
            return
        with self._lock:
            if self._heads is not None:
                return
            region = self._read(self._body, self._offs_len + self._chunks_len, "range-bitmap dictionary chunks")
            if self._width is not None:
                heads, codes, meta = self._parse_fixed(region)
            else:
                heads, codes, meta = self._parse_each(region)
            if len(codes) > 1 and not bool(np.all(np.diff(np.asarray(codes, dtype=np.int64)) > 0)):
                self._corrupt("range-bitmap dictionary chunks", "head codes are not increasing")
            self._codes, self._meta = codes, meta
            self.nbytes_cached += len(region)
            self._heads = heads

    def _parse_fixed(self, region: bytes) -> tuple[list[Rep], list[int], list[tuple[int, int, int, int]]]:
        count = self.chunk_count
        width = self._width
        assert width is not None
        hl = 1 + width + 20
        offsets = np.frombuffer(region, dtype=">i4", count=count).astype(np.int64)
        if self._chunks_len != hl * count or not np.array_equal(offsets, np.arange(count, dtype=np.int64) * hl):
            # not the layout Paimon writes; fall back to the general per-chunk parse
            return self._parse_each(region)
        dtype = np.dtype([("version", "u1"), ("key", f"S{width}"), ("code", ">i4"), ("keys_offset", ">i4"),
                          ("size", ">i4"), ("keys_length", ">i4"), ("fixed_length", ">i4")])
        hdr = np.frombuffer(region, dtype=dtype, count=count, offset=4 * count)
        if count and (int(hdr["version"].max()) > VERSION):
            raise UnsupportedVersionError("range-bitmap chunk version above 1", path=self._source.name,
                                          block="range-bitmap dictionary chunks")
        sizes = hdr["size"].astype(np.int64)
        klen = hdr["keys_length"].astype(np.int64)
        koff = hdr["keys_offset"].astype(np.int64)
        bad = (hdr["fixed_length"] != width) | (sizes < 0) | (klen != sizes * width) | (koff < 0)
        if count and bool(bad.any()):
            i = int(np.flatnonzero(bad)[0])
            self._corrupt(f"range-bitmap dictionary chunk {i}", "inconsistent chunk header")
        heads = reps_of_fixed_block(self._kt, np.frombuffer(region, dtype=np.uint8, count=count * hl,
                                                            offset=4 * count).reshape(count, hl)[:, 1:1 + width]
                                    .tobytes(), count).tolist()
        codes = hdr["code"].astype(np.int64).tolist()
        meta = list(zip(koff.tolist(), sizes.tolist(), [0] * count, klen.tolist()))
        return heads, codes, meta

    def _parse_each(self, region: bytes) -> tuple[list[Rep], list[int], list[tuple[int, int, int, int]]]:
        count = self.chunk_count
        offs = be_i32s(count).unpack_from(region, 0) if count else ()
        base = 4 * count
        heads: list[Rep] = []
        codes: list[int] = []
        meta: list[tuple[int, int, int, int]] = []
        for i in range(count):
            start = offs[i]
            end = offs[i + 1] if i + 1 < count else self._chunks_len
            if not 0 <= start <= end <= self._chunks_len:
                self._corrupt(f"range-bitmap dictionary chunk {i}", f"chunk header bounds {start}..{end}")
            block = f"range-bitmap dictionary chunk {i}"
            h = region[base + start: base + end]
            try:
                if h[0] > VERSION:
                    raise UnsupportedVersionError(f"chunk version {h[0]}", path=self._source.name, block=block)
                if self._width is not None:
                    key = h[1:1 + self._width]
                    pos = 1 + self._width
                    code, koff, size, klen, flen = RANGE_DICT_CHUNK_TAIL.unpack_from(h, pos)
                    if flen != self._width or klen != size * flen:
                        self._corrupt(block, "inconsistent fixed-length chunk header")
                    olen = 0
                else:
                    n = BE_I32.unpack_from(h, 1)[0]
                    if n < 0 or 5 + n > len(h):
                        self._corrupt(block, f"head key length {n}")
                    key = h[1:5 + n]
                    pos = 5 + n
                    code, koff, size, olen, klen = RANGE_DICT_CHUNK_TAIL.unpack_from(h, pos)
                    if olen != 4 * size:
                        self._corrupt(block, "offsets length does not match the key count")
            except (struct.error, IndexError):
                self._corrupt(block, "chunk header is truncated")
            if size < 0 or koff < 0 or klen < 0:
                self._corrupt(block, "negative sizes in chunk header")
            if len(key) != (self._width if self._width is not None else len(key)):
                self._corrupt(block, "head key is truncated")
            heads.append(rep_of_bytes(self._kt, bytes(key)))
            codes.append(code)
            meta.append((koff, size, olen, klen))
        return heads, codes, meta

    # -- key blocks
    def _block(self, i: int) -> list[Rep]:
        blk = self._blocks.get(i)
        if blk is not None:
            return blk
        with self._lock:
            blk = self._blocks.get(i)
            if blk is not None:
                return blk
            koff, size, olen, klen = self._meta[i]
            name = f"range-bitmap dictionary chunk {i}"
            start = self._keys_base + koff
            if start + olen + klen > self._offset + self._length:
                self._corrupt(name, "key block runs past the dictionary")
            data = self._read(start, olen + klen, name)
            if self._width is not None:
                blk = reps_of_fixed_block(self._kt, data, size).tolist()
            else:
                blk = self._parse_var_block(data, size, olen, klen, name)
            for a, b in zip(blk, blk[1:]):
                if not a < b:
                    self._corrupt(name, "keys are not strictly increasing")
            if blk and not self._heads[i] < blk[0]:  # type: ignore[index]  # headers loaded above
                self._corrupt(name, "first key is not above the head key")
            self._blocks[i] = blk
            self.nbytes_cached += olen + klen + 8 * size
            return blk

    def _parse_var_block(self, data: bytes, size: int, olen: int, klen: int, name: str) -> list[Rep]:
        rel = be_i32s(size).unpack_from(data, 0) if size else ()
        out = []
        for r in rel:
            p = olen + r
            if r < 0 or p + 4 > olen + klen:
                self._corrupt(name, f"key offset {r} outside the block")
            n = BE_I32.unpack_from(data, p)[0]
            if n < 0 or p + 4 + n > olen + klen:
                self._corrupt(name, f"key length {n} runs past the block")
            out.append(data[p + 4:p + 4 + n])
        return out

    # -- lookups
    def find(self, rep: Rep) -> int:
        """Code of the key equal to `rep`, else -(insertion code + 1) (spec 2.3, Paimon's `find`)."""
        code, exact = self.locate(rep)
        return code if exact else -(code + 1)

    def locate(self, rep: Rep) -> tuple[int, bool]:
        """(code, True) for an exact hit, else (code of the first key above `rep`, False)."""
        self._load_headers()
        heads = self._heads
        assert heads is not None
        i = bisect_right(heads, rep) - 1
        if i < 0:
            return 0, False
        base = self._codes[i]
        if heads[i] == rep:
            return base, True
        blk = self._block(i)
        j = bisect_left(blk, rep)
        if j < len(blk) and blk[j] == rep:
            return base + 1 + j, True
        return base + 1 + j, False

    def rep_of_code(self, code: int) -> Rep:
        """Order representation of the key with `code`."""
        self._load_headers()
        i = bisect_right(self._codes, code) - 1
        if i < 0:
            self._corrupt("range-bitmap dictionary", f"no chunk holds code {code}")
        base = self._codes[i]
        if base == code:
            return self._heads[i]  # type: ignore[index]  # headers loaded above
        blk = self._block(i)
        j = code - base - 1
        if j >= len(blk):
            self._corrupt(f"range-bitmap dictionary chunk {i}", f"no key with code {code}")
        return blk[j]
