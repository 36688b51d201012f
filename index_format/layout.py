"""Fixed byte layouts: magic, version, footer struct, trailer, varints (spec §0, §2.2, §2.4), and every struct
format of the package (the global index, file indexes, range bitmaps, deletion vectors, keys).

Imports only the standard library and index_format.errors.
"""
from __future__ import annotations

import functools
import struct

from index_format.errors import CorruptFileError

MAGIC = 0x42474958  # "BGIX", spec §2.2
VERSION = 1
FOOTER_SIZE = 48
TRAILER_SIZE = 5  # type byte + LE CRC-32, spec §2.4
# spec §2.2: three (BE int64 offset, BE int32 length) pairs, then value count, version, magic (BE int32)
FOOTER_STRUCT = struct.Struct(">qiqiqiiii")
TRAILER_CRC = struct.Struct("<I")
# spec §1: portable 64-bit roaring = bucket count (u64 LE) then per bucket high key (u32 LE) + 32-bit map
BITMAP64_ONE_BUCKET_HIGH0 = b"\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
EMPTY_BITMAP64 = b"\x00" * 8
# Paimon's btree global index (an SST file): a 52-byte little-endian footer of (bloom offset, size, expected
# entries), (index block offset, size), (null bitmap offset, size), version, magic "PBTI" read as an LE int.
BTREE_MAGIC = 0x50425449
BTREE_FOOTER_SIZE = 52
BTREE_FOOTER = struct.Struct("<qiqqiqiii")
BTREE_BLOCK_TAIL = struct.Struct("<iB")   # an SST block's last 5 bytes: int (record size or count), alignment byte

# Primitives. Big-endian: Java's DataOutput (file indexes, range bitmaps, deletion-vector framing).
BE_I8 = struct.Struct(">b")
BE_U8 = struct.Struct(">B")
BE_U16 = struct.Struct(">H")
BE_I32 = struct.Struct(">i")
BE_U32 = struct.Struct(">I")
BE_I64 = struct.Struct(">q")
BE_F32 = struct.Struct(">f")
BE_F64 = struct.Struct(">d")
BE_I32_PAIR = struct.Struct(">ii")
# Little-endian: spec §3 keys, spec §4 meta lengths, spec §2.4 LZ headers, portable roaring bitmaps.
LE_I8 = struct.Struct("<b")
LE_I16 = struct.Struct("<h")
LE_U16 = struct.Struct("<H")
LE_I32 = struct.Struct("<i")
LE_U32 = struct.Struct("<I")
LE_I64 = struct.Struct("<q")
LE_U64 = struct.Struct("<Q")
LE_F32 = struct.Struct("<f")
LE_F64 = struct.Struct("<d")
LE_I32_PAIR = struct.Struct("<ii")   # spec §2.4: compressed length, original length
LE_U32_PAIR = struct.Struct("<II")

# Records of Paimon's file-index formats (Java DataOutput).
DEIX_SOURCE_META = struct.Struct(">iiq")        # Paimon Java's GlobalIndexMeta.source_meta: magic, version, snapshot
FILE_INDEX_PREFIX = struct.Struct(">qii")         # container: magic, version, headLength
BITMAP_INDEX_HEAD = struct.Struct(">BiiB")        # bitmap index: version, rowCount, nonNullBitmapNumber, hasNull
BSI_INDEX_HEAD = struct.Struct(">bi")             # BSI index: version, rowCount
BSI_SLICES_HEAD = struct.Struct(">bqq")           # one BSI: version, min, max
RANGE_BITMAP_TOP = struct.Struct(">bii")          # range bitmap: version, rowCount, cardinality
RANGE_BSI_HEAD = struct.Struct(">bbii")           # its BSI: version, slice count (one byte), ebmLength, indexesLength
RANGE_DICT_HEADER = struct.Struct(">ibiii")       # its dictionary: headerLength=13, version, chunkCount,
                                                  # offsetsLength, chunksLength
# a dictionary chunk's tail: headCode, keysOffset, size, then keysLength, fixedLength (fixed-width keys) or
# offsetsLength, keysLength (variable-width keys)
RANGE_DICT_CHUNK_TAIL = struct.Struct(">iiiii")

# Paimon's GlobalIndexResultSerializer (a query answer as Java's scans ship it): version 2, result kind
# (0 unscored, 1 scored), then the row-id bitmap's length; version 1 had no kind byte
GLOBAL_INDEX_RESULT_HEAD = struct.Struct(">ibi")
GLOBAL_INDEX_RESULT_V1_HEAD = struct.Struct(">ii")


@functools.lru_cache(maxsize=128)
def be_i32s(count: int) -> struct.Struct:
    """`count` big-endian int32s in a row (offset tables, slice index pairs)."""
    return struct.Struct(f">{count}i")


def be_u16s(count: int) -> struct.Struct:
    """`count` big-endian uint16s in a row (UTF-16 units)."""
    return struct.Struct(f">{count}H")


def java_int(x: int) -> int:
    """`x` wrapped to a signed 32-bit two's-complement value, as Java's int arithmetic leaves it."""
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


MAX_VARINT_BYTES = 10  # spec §0: the decoder accepts up to 10 bytes for a long
_VARINT_1 = [bytes([i]) for i in range(128)]


def varint(n: int) -> bytes:
    """Unsigned LEB128 (spec §0); negative values are a caller bug."""
    if n < 128:
        if n < 0:
            raise ValueError(f"negative varint {n}")
        return _VARINT_1[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint_len(n: int) -> int:
    """Encoded size of varint(n)."""
    if n < 128:
        return 1
    return (n.bit_length() + 6) // 7


def read_varint(buf: bytes | memoryview, pos: int, *, limit: int = (1 << 63) - 1,
                path: str | None = None, block: str | None = None) -> tuple[int, int]:
    """Decode one varint at `pos`; returns (value, new_pos). Bad input → CorruptFileError."""
    b = buf[pos] if pos < len(buf) else -1
    if 0 <= b < 0x80:
        return b, pos + 1
    result = 0
    shift = 0
    end = len(buf)
    start = pos
    while True:
        if pos >= end:
            raise CorruptFileError("varint runs past the end of the block", path=path, block=block)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if pos - start >= MAX_VARINT_BYTES:
            raise CorruptFileError("varint longer than 10 bytes", path=path, block=block)
    if result > limit:
        raise CorruptFileError(f"varint value {result} out of range", path=path, block=block)
    return result, pos
