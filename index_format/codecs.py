"""Trailed block codecs (spec §2.4): none/zstd/lz4/lzo bodies, the keep-uncompressed rule, CRC trailer.

Imports lz4, zstandard (each on first use: an uncompressed build never loads them) and
index_format.{layout,errors}; nothing that reads files. LZO is decode-only: a small LZO1X decompressor
written from the stream format (no maintained PyPI package fits).
"""
from __future__ import annotations

import threading
import zlib
from typing import TYPE_CHECKING

from index_format.errors import ChecksumError, CorruptFileError, InvalidOptionError
from index_format.layout import LE_I32_PAIR, TRAILER_CRC, TRAILER_SIZE, read_varint, varint

CODEC_IDS = {"none": 0, "zstd": 1, "lz4": 2, "lzo": 3}
CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}
WRITABLE = ("none", "zstd", "lz4")
# A dictionary block or block index larger than this is treated as corrupt (bomb guard).
MAX_UNCOMPRESSED = 256 * 1024 * 1024
_local = threading.local()

if TYPE_CHECKING:
    import zstandard


def _codec_errors() -> tuple[type[BaseException], ...]:
    """What a failed zstd, lz4 or LZO decode raises."""
    import lz4.block
    import zstandard
    return zstandard.ZstdError, lz4.block.LZ4BlockError, LzoError, ValueError


def _zstd_compressor(level: int, content_size: bool = False) -> zstandard.ZstdCompressor:
    cache = getattr(_local, "zstd", None)
    if cache is None:
        cache = _local.zstd = {}
    comp = cache.get((level, content_size))
    if comp is None:
        import zstandard
        # Java's ZstdOutputStream writes no content size (spec §2.4); mimic it. pypaimon-rust compresses in one
        # shot with the content size (a single-segment frame); both decode alike.
        comp = cache[level, content_size] = zstandard.ZstdCompressor(level=level, write_content_size=content_size)
    return comp


def check_codec(name: str) -> str:
    codec = name.lower()
    if codec not in CODEC_IDS:
        raise InvalidOptionError(f"unknown compression {name!r}; expected none, zstd or lz4 "
                                 "(lzo can only be read)")
    if codec not in WRITABLE:
        raise InvalidOptionError(f"compression {name!r} can be read but not written; write none, zstd or lz4")
    return codec


def trailer(stored_body: bytes, type_id: int) -> bytes:
    """The 5-byte trailer: type byte, LE CRC-32 over body + type byte (spec §2.4)."""
    crc = zlib.crc32(bytes((type_id,)), zlib.crc32(stored_body))
    return bytes((type_id,)) + TRAILER_CRC.pack(crc)


def encode_block(body: bytes, codec: str = "none", level: int = 1, *,
                 zstd_content_size: bool = False) -> tuple[bytes, int]:
    """(stored_body, type_id) applying the keep-uncompressed rule (spec §2.4).

    zstd_content_size: zstd frames record the body size, as pypaimon-rust writes them (Java's do not).
    """
    if codec == "none" or not body:
        return body, 0
    n = len(body)
    if codec == "zstd":
        payload = _zstd_compressor(level, zstd_content_size).compress(body)
    elif codec == "lz4":
        import lz4.block
        raw = lz4.block.compress(body, store_size=False)
        payload = LE_I32_PAIR.pack(len(raw), n) + raw
    else:
        raise InvalidOptionError(f"compression {codec!r} can be read but not written")
    stored = varint(n) + payload
    if len(stored) < n - n // 8:
        return stored, CODEC_IDS[codec]
    return body, 0


def encode_block_with_trailer(body: bytes, codec: str = "none", level: int = 1, *,
                              zstd_content_size: bool = False) -> tuple[bytes, int]:
    """(stored_body + trailer, stored body length)."""
    stored, type_id = encode_block(body, codec, level, zstd_content_size=zstd_content_size)
    return stored + trailer(stored, type_id), len(stored)


def decode_block(data: bytes | memoryview, *, path: str | None = None, block: str | None = None,
                 offset: int | None = None) -> bytes:
    """Verify the trailer CRC of `stored_body + trailer` and return the decoded body."""
    if len(data) < TRAILER_SIZE:
        raise CorruptFileError("block shorter than its trailer", path=path, block=block, offset=offset)
    body = data[:-TRAILER_SIZE]
    type_id = data[-TRAILER_SIZE]
    stored_crc = TRAILER_CRC.unpack_from(data, len(data) - 4)[0]
    crc = zlib.crc32(bytes((type_id,)), zlib.crc32(body))
    if crc != stored_crc:
        raise ChecksumError(f"CRC-32 mismatch: stored {stored_crc:08x}, computed {crc:08x}",
                            path=path, block=block, offset=offset)
    if type_id == 0:
        return bytes(body)
    if type_id not in CODEC_NAMES:
        raise CorruptFileError(f"unknown compression type {type_id}", path=path, block=block, offset=offset)
    n, pos = read_varint(body, 0, limit=MAX_UNCOMPRESSED, path=path, block=block)
    payload = body[pos:]
    try:
        if type_id == 1:
            import zstandard
            out = zstandard.ZstdDecompressor().decompress(bytes(payload), max_output_size=max(n, 1))
        else:
            if len(payload) < 8:
                raise CorruptFileError("compressed block shorter than its 8-byte header",
                                       path=path, block=block, offset=offset)
            clen, olen = LE_I32_PAIR.unpack_from(payload, 0)
            if olen != n or clen != len(payload) - 8 or (olen == 0) != (clen == 0):
                raise CorruptFileError(
                    f"compressed header lengths ({clen}, {olen}) disagree with block ({len(payload) - 8}, {n})",
                    path=path, block=block, offset=offset)
            raw = bytes(payload[8:])
            if n == 0:
                out = b""
            elif type_id == 2:
                import lz4.block
                out = lz4.block.decompress(raw, uncompressed_size=n)
            else:
                out = lzo_decompress(raw, n)
    except CorruptFileError:
        raise
    except Exception as exc:
        if not isinstance(exc, _codec_errors()):
            raise
        raise CorruptFileError(f"{CODEC_NAMES[type_id]} decompression failed: {exc}",
                               path=path, block=block, offset=offset) from None
    if len(out) != n:
        raise CorruptFileError(f"decompressed {len(out)} bytes, block declares {n}",
                               path=path, block=block, offset=offset)
    return out


# ---------------------------------------------------------------- LZO1X (read only)

class LzoError(ValueError):
    """Malformed LZO1X data (wrapped into CorruptFileError by codecs.py)."""


def lzo_decompress(src: bytes, out_len: int) -> bytes:
    """Decode one raw LZO1X block whose output must be exactly `out_len` bytes."""
    out = bytearray()
    ip = 0
    n = len(src)

    def byte() -> int:
        nonlocal ip
        if ip >= n:
            raise LzoError("input overrun")
        b = src[ip]
        ip += 1
        return b

    def literals(count: int) -> None:
        nonlocal ip
        if ip + count > n:
            raise LzoError("input overrun in literal run")
        if len(out) + count > out_len:
            raise LzoError("output overrun")
        out.extend(src[ip:ip + count])
        ip += count

    def copy_match(dist: int, count: int) -> None:
        start = len(out) - dist
        if dist <= 0 or start < 0:
            raise LzoError("match distance before start of output")
        if len(out) + count > out_len:
            raise LzoError("output overrun")
        if dist >= count:
            out.extend(out[start:start + count])
        else:
            for i in range(count):  # overlapping copy repeats the pattern
                out.append(out[start + i])

    def extend_len(base: int) -> int:
        # a zero byte adds 255 each, then the first non-zero byte is added to base
        extra = 0
        while True:
            b = byte()
            if b:
                return base + extra + b
            extra += 255
            if extra > out_len + 255:
                raise LzoError("run length overflow")

    def le16() -> int:
        lo = byte()
        return lo | (byte() << 8)

    state = 0
    t = src[0] if n else None
    if t is None:
        raise LzoError("empty input")
    if t > 17:
        ip = 1
        t -= 17
        literals(t)
        state = t if t < 4 else 4
    while True:
        t = byte()
        if t < 16:
            if state == 0:
                if t == 0:
                    t = extend_len(15)
                literals(t + 3)
                state = 4
                continue
            if state != 4:
                # 2-byte match at a short distance right after a short literal run
                dist = 1 + (t >> 2) + (byte() << 2)
                copy_match(dist, 2)
                nxt = t & 3
            else:
                dist = 1 + 0x800 + (t >> 2) + (byte() << 2)
                copy_match(dist, 3)
                nxt = t & 3
        elif t >= 64:
            dist = 1 + ((t >> 2) & 7) + (byte() << 3)
            copy_match(dist, (t >> 5) + 1)
            nxt = t & 3
        elif t >= 32:
            length = t & 31 or extend_len(31)
            v = le16()
            copy_match(1 + (v >> 2), length + 2)
            nxt = v & 3
        else:
            dist = (t & 8) << 11
            length = t & 7 or extend_len(7)
            v = le16()
            dist += v >> 2
            if dist == 0:
                if len(out) != out_len:
                    raise LzoError(f"end marker after {len(out)} of {out_len} bytes")
                if ip != n:
                    raise LzoError("trailing bytes after end marker")
                return bytes(out)
            copy_match(dist + 0x4000, length + 2)
            nxt = v & 3
        state = nxt
        if nxt:
            literals(nxt)
