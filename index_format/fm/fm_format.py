"""Paimon's FM-index V1 container (index_type `fm`): constants, checksummed blocks, footers, the partition
directory and the manifest metadata, encoded and decoded (docs/format-notes.md, "FM global index").

A file is a run of independently readable partitions, then the container directory (the index metadata that
Paimon also stores as the manifest entry's `_INDEX_META`) and a 64-byte container footer. A partition is its
payload blocks (quad wavelet levels, sampled rows, sampled suffix values, null rows, row boundaries), its
directory block and a 64-byte partition footer. Every integer is big-endian; a block's checksum is the CRC-32
of its stored bytes followed by its compression id. Imports numpy and index_format.{errors,codecs} only.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np

from index_format.errors import ChecksumError, CorruptFileError, UnsupportedVersionError

TERMINATOR = 0
SEPARATOR = 1
FIRST_BYTE_SYMBOL = 2
MAX_ALPHABET = 258

PARTITION_MAGIC = 0x464D4950      # "FMIP"
CONTAINER_MAGIC = 0x464D4958      # "FMIX"
META_MAGIC = 0x464D4D45           # "FMME"
VERSION = 1
META_VERSION = 1
FEATURE_FLAGS = 1 | 2 | 4               # sampled SA, dense quad wavelet, separator row ids: what pypaimon-rust writes
VERIFICATION_PAGES = 8                  # newer Java also writes exact-verification value pages (read, not written)
MAX_VERIFICATION_BLOCK = 64 << 20
FOOTER_SIZE = 64

BLOCK_WORDS = 4096                # u64 words per bit or quad block
BLOCK_BITS = BLOCK_WORDS * 64
QUAD_BLOCK_VALUES = BLOCK_WORDS * 32
VALUE_BLOCK_INTS = 8192
MAX_DIRECTORY = 16 << 20
MAX_DATA_BLOCK = 64 << 10

CODEC_IDS = {"none": 0, "zstd": 1, "lz4": 2, "lzo": 3}
CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}

_BLOCK_INFO = struct.Struct(">QIIII")
_META_HEAD = struct.Struct(">IIQQI")
_META_PART = struct.Struct(">QQQI")
_PART_FOOTER = struct.Struct(">QIIIIQIIIIIIII")
_CONT_FOOTER = struct.Struct(">QIIIIQQIIIIII")


def crc(data: bytes | bytearray | memoryview, codec_id: int) -> int:
    """Paimon's block checksum: CRC-32 over the stored bytes, then the compression id byte."""
    return zlib.crc32(bytes((codec_id,)), zlib.crc32(data))


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """Where one stored block lies (absolute file offset) and how to check and decode it."""

    offset: int
    stored: int
    uncompressed: int
    codec: int
    checksum: int

    def pack(self) -> bytes:
        return _BLOCK_INFO.pack(self.offset, self.stored, self.uncompressed, self.codec, self.checksum)


@dataclass(frozen=True, slots=True)
class PartitionMeta:
    start: int
    end: int
    first_row_id: int
    row_count: int


@dataclass(frozen=True, slots=True)
class IndexMeta:
    """The container directory, also the manifest entry's `_INDEX_META`."""

    first_row_id: int
    row_count: int
    partitions: tuple[PartitionMeta, ...]


# ---------------------------------------------------------------- blocks

def compress(body: bytes, codec: str, level: int) -> tuple[bytes, int]:
    """(stored bytes, codec id): the compressor's output verbatim (no length varint, unlike SST blocks), kept
    only when it saves at least 1/8 of the body, as Java and pypaimon-rust decide."""
    n = len(body)
    if codec == "none" or n == 0:
        return body, 0
    if codec == "lz4":   # pypaimon-rust's encoder, so the bytes are its bytes
        from index_format.fm.lz4_block import compress_block
        raw = compress_block(body)
        stored = struct.pack("<ii", len(raw), n) + raw
    elif codec == "zstd":
        import zstandard
        stored = zstandard.ZstdCompressor(level=level, write_content_size=True).compress(body)
    else:
        raise CorruptFileError(f"cannot write {codec} blocks")
    if len(stored) < n - n // 8:
        return stored, CODEC_IDS[codec]
    return body, 0


def decode_block(stored: bytes | memoryview, info: BlockInfo, *, path: str, block: str) -> bytes:
    """Check the block's CRC and lengths, then decompress it.

    Raises:
        ChecksumError: CRC mismatch. CorruptFileError: bad lengths, unknown codec, undecodable data.
    """
    if len(stored) != info.stored:
        raise CorruptFileError(f"stored length {len(stored)} != {info.stored}", path=path, block=block,
                               offset=info.offset)
    actual = crc(stored, info.codec)
    if actual != info.checksum:
        raise ChecksumError(f"CRC-32 mismatch: stored {info.checksum:08x}, computed {actual:08x}", path=path,
                            block=block, offset=info.offset)
    if info.codec == 0:
        if info.stored != info.uncompressed:
            raise CorruptFileError("uncompressed block lengths differ", path=path, block=block, offset=info.offset)
        return bytes(stored)
    n = info.uncompressed
    try:
        if info.codec == 2:
            import lz4.block
            if len(stored) < 8:
                raise CorruptFileError("lz4 block shorter than its header", path=path, block=block,
                                       offset=info.offset)
            clen, olen = struct.unpack_from("<ii", stored, 0)
            if clen != len(stored) - 8 or olen != n:
                raise CorruptFileError(f"lz4 header lengths ({clen}, {olen}) disagree with the block", path=path,
                                       block=block, offset=info.offset)
            out = lz4.block.decompress(bytes(stored[8:]), uncompressed_size=n)
        elif info.codec == 1:
            import zstandard
            out = zstandard.ZstdDecompressor().decompress(bytes(stored), max_output_size=n)
        elif info.codec == 3:
            from index_format.codecs import lzo_decompress
            out = lzo_decompress(bytes(stored), n)
        else:
            raise CorruptFileError(f"unknown compression id {info.codec}", path=path, block=block,
                                   offset=info.offset)
    except CorruptFileError:
        raise
    except Exception as exc:   # lz4 / zstd / LZO errors
        raise CorruptFileError(f"{CODEC_NAMES.get(info.codec)} decompression failed: {exc}", path=path,
                               block=block, offset=info.offset) from None
    if len(out) != n:
        raise CorruptFileError(f"decompressed {len(out)} bytes, block declares {n}", path=path, block=block,
                               offset=info.offset)
    return bytes(out)


def check_block(info: BlockInfo, lo: int, hi: int, limit: int, *, path: str, block: str) -> None:
    """A block's range must lie in [lo, hi) with sane lengths (checked before any allocation)."""
    if (info.stored <= 0 or info.uncompressed <= 0 or info.stored > info.uncompressed or info.uncompressed > limit
            or info.offset < lo or info.offset + info.stored > hi or info.codec not in CODEC_NAMES):
        raise CorruptFileError(f"invalid block metadata {info}", path=path, block=block, offset=info.offset)


# ---------------------------------------------------------------- footers and the index metadata

def encode_index_meta(meta: IndexMeta) -> bytes:
    out = bytearray(_META_HEAD.pack(META_MAGIC, META_VERSION, meta.first_row_id, meta.row_count,
                                    len(meta.partitions)))
    for p in meta.partitions:
        out += _META_PART.pack(p.start, p.end, p.first_row_id, p.row_count)
    out += struct.pack(">I", crc(out, 0))
    return bytes(out)


def decode_index_meta(data: bytes, *, path: str, block: str = "container directory") -> IndexMeta:
    """The index metadata (container directory or manifest `_INDEX_META`), checked for contiguous partitions."""
    if len(data) < _META_HEAD.size + 4:
        raise CorruptFileError("index metadata too short", path=path, block=block)
    magic, version, first, rows, count = _META_HEAD.unpack_from(data, 0)
    if magic != META_MAGIC:
        raise CorruptFileError(f"bad index metadata magic {magic:08x}", path=path, block=block)
    if version != META_VERSION:
        raise UnsupportedVersionError(f"index metadata version {version}", path=path, block=block)
    if count == 0 or len(data) != _META_HEAD.size + count * _META_PART.size + 4:
        raise CorruptFileError("index metadata length does not match its partition count", path=path, block=block)
    if struct.unpack_from(">I", data, len(data) - 4)[0] != crc(data[:-4], 0):
        raise ChecksumError("index metadata checksum mismatch", path=path, block=block)
    parts = []
    offset, row = 0, first
    for i in range(count):
        p = PartitionMeta(*_META_PART.unpack_from(data, _META_HEAD.size + i * _META_PART.size))
        if p.start != offset or p.end - p.start < FOOTER_SIZE or p.first_row_id != row or p.row_count == 0:
            raise CorruptFileError(f"partition {i} is not contiguous with the previous one", path=path, block=block)
        offset, row = p.end, row + p.row_count
        parts.append(p)
    if rows == 0 or row != first + rows:
        raise CorruptFileError("partition row counts do not add up to the file's", path=path, block=block)
    return IndexMeta(first, rows, tuple(parts))


def _check_footer(data: bytes, magic: int, what: str, *, path: str, offset: int) -> None:
    if len(data) != FOOTER_SIZE or struct.unpack_from(">I", data, 56)[0] != magic:
        raise CorruptFileError(f"not an FM {what} (bad footer magic)", path=path, block=f"{what} footer",
                               offset=offset)
    if struct.unpack_from(">I", data, 52)[0] != VERSION:
        raise UnsupportedVersionError(f"FM {what} version {struct.unpack_from('>I', data, 52)[0]}", path=path,
                                      block=f"{what} footer", offset=offset)
    if struct.unpack_from(">I", data, 60)[0] != crc(data[:60], 0):
        raise ChecksumError(f"FM {what} footer checksum mismatch", path=path, block=f"{what} footer",
                            offset=offset)
    if struct.unpack_from(">II", data, 44) not in ((FEATURE_FLAGS, 0), (FEATURE_FLAGS | VERIFICATION_PAGES, 0)):
        raise UnsupportedVersionError(f"FM {what} feature flags {struct.unpack_from('>I', data, 44)[0]}",
                                      path=path, block=f"{what} footer", offset=offset)


def encode_container_footer(directory: BlockInfo, first_row_id: int, row_count: int, partitions: int) -> bytes:
    body = directory.pack() + struct.pack(">QQIIIII", first_row_id, row_count, partitions, FEATURE_FLAGS, 0,
                                          VERSION, CONTAINER_MAGIC)
    return body + struct.pack(">I", crc(body, 0))


def decode_container_footer(data: bytes, *, path: str, offset: int) -> tuple[BlockInfo, int, int, int]:
    """(directory block, first row id, row count, partition count)."""
    _check_footer(data, CONTAINER_MAGIC, "container", path=path, offset=offset)
    v = _CONT_FOOTER.unpack(data)
    return BlockInfo(*v[:5]), v[5], v[6], v[7]


def encode_partition_footer(directory: BlockInfo, first_row_id: int, rows: int, text_length: int,
                            sample_rate: int) -> bytes:
    body = directory.pack() + struct.pack(">QIIIIIII", first_row_id, rows, text_length, sample_rate,
                                          FEATURE_FLAGS, 0, VERSION, PARTITION_MAGIC)
    return body + struct.pack(">I", crc(body, 0))


@dataclass(frozen=True, slots=True)
class PartitionFooter:
    directory: BlockInfo
    first_row_id: int
    row_count: int
    text_length: int
    sample_rate: int
    flags: int = FEATURE_FLAGS


def decode_partition_footer(data: bytes, *, path: str, offset: int, name: str) -> PartitionFooter:
    _check_footer(data, PARTITION_MAGIC, "partition", path=path, offset=offset)
    v = _PART_FOOTER.unpack(data)
    footer = PartitionFooter(BlockInfo(*v[:5]), v[5], v[6], v[7], v[8], v[9])
    rate = footer.sample_rate
    if rate < 1 or rate > 1024 or rate & (rate - 1) or footer.row_count == 0 \
            or footer.text_length < footer.row_count + 1:
        raise CorruptFileError("inconsistent partition footer", path=path, block=f"{name} footer", offset=offset)
    return footer


# ---------------------------------------------------------------- the partition directory

def levels_for(alphabet_size: int) -> int:
    """Quad wavelet levels for symbols 0 .. alphabet_size - 1 (2 bits each, at least one)."""
    return max(1, ((alphabet_size - 1).bit_length() + 1) // 2)


@dataclass(frozen=True, slots=True)
class VectorBlock:
    """One block of a quad, bit or int vector: its first value, value count, summary counts and BlockInfo."""

    first: int
    count: int
    info: BlockInfo


@dataclass(slots=True)
class Directory:
    row_count: int
    text_length: int
    sample_rate: int
    level_count: int
    alphabet_size: int
    byte_to_symbol: np.ndarray       # int32[256], -1 for absent bytes
    cumulative: np.ndarray           # int64[alphabet_size + 1]
    wavelets: list[list[VectorBlock]]
    sampled_rows: list[VectorBlock]
    sample_count: int
    sample_values: list[VectorBlock]
    null_rows: list[VectorBlock]
    null_count: int
    boundaries: list[VectorBlock]
    pages: list[BlockInfo]           # newer Java's verification pages (empty for pypaimon-rust files)


class _Cursor:
    """Big-endian u32/u64 reads over a directory, every read bounds-checked."""

    def __init__(self, data: bytes, path: str, block: str) -> None:
        self.data, self.pos, self.path, self.block = data, 0, path, block

    def u32s(self, n: int) -> tuple[int, ...]:
        end = self.pos + 4 * n
        if end > len(self.data):
            raise CorruptFileError("truncated directory", path=self.path, block=self.block)
        out = struct.unpack_from(f">{n}I", self.data, self.pos)
        self.pos = end
        return out

    def u32(self) -> int:
        return self.u32s(1)[0]

    def block_info(self) -> BlockInfo:
        if self.pos + _BLOCK_INFO.size > len(self.data):
            raise CorruptFileError("truncated directory", path=self.path, block=self.block)
        v = _BLOCK_INFO.unpack_from(self.data, self.pos)
        self.pos += _BLOCK_INFO.size
        return BlockInfo(*v)

    def fail(self, why: str) -> CorruptFileError:
        return CorruptFileError(why, path=self.path, block=self.block)


def decode_directory(data: bytes, footer: PartitionFooter, start: int, *, path: str, name: str) -> Directory:
    """Parse and check a partition directory: lengths, counts and block offsets (contiguous from `start`)."""
    c = _Cursor(data, path, f"{name} directory")
    rows, text, rate, levels, alphabet, words = c.u32s(6)
    if (rows, text, rate) != (footer.row_count, footer.text_length, footer.sample_rate):
        raise c.fail("directory and footer disagree")
    if not FIRST_BYTE_SYMBOL <= alphabet <= MAX_ALPHABET or levels != levels_for(alphabet) or words != BLOCK_WORDS:
        raise c.fail("unsupported physical layout")
    b2s = np.array(struct.unpack_from(">256i", data, c.pos), dtype=np.int32) if c.pos + 1024 <= len(data) \
        else None
    if b2s is None:
        raise c.fail("truncated directory")
    c.pos += 1024
    present = b2s[b2s >= 0]
    if not np.array_equal(present, np.arange(FIRST_BYTE_SYMBOL, FIRST_BYTE_SYMBOL + len(present))) \
            or len(present) + FIRST_BYTE_SYMBOL != alphabet or np.any(b2s < -1):
        raise c.fail("invalid dense byte alphabet")
    cum = np.array(c.u32s(alphabet + 1), dtype=np.int64)
    if cum[0] != 0 or cum[-1] != text or np.any(np.diff(cum) < 0) or cum[1] != 1 or cum[2] - cum[1] != rows:
        raise c.fail("invalid cumulative counts")
    expected = [start]

    def blocks(n_values: int, per_block: int, extra: int, length_of: int | None) -> list[VectorBlock]:
        n_blocks = c.u32()
        if n_blocks != -(-n_values // per_block):
            raise c.fail("block count does not cover the vector")
        out, first = [], 0
        for _ in range(n_blocks):
            head = c.u32s(2 + extra)
            info = c.block_info()
            count = min(per_block, n_values - first)
            if head[0] != first or head[1] != count:
                raise c.fail("vector blocks out of order")
            check_block(info, start, footer.directory.offset, MAX_DATA_BLOCK, path=path, block=f"{name} directory")
            if info.offset != expected[0]:
                raise c.fail("payload blocks are aliased, reordered or leave gaps")
            expected[0] += info.stored
            out.append(VectorBlock(first, count, info))
            first += count
        return out

    wavelets = []
    for _ in range(levels):
        c.u32s(4)   # digit starts: recomputed by the reader
        if c.u32() != text:
            raise c.fail("wavelet level length differs from the text")
        c.u32s(4)
        wavelets.append(blocks(text, QUAD_BLOCK_VALUES, 8, None))
    if c.u32() != text:
        raise c.fail("sampled-rows vector length differs from the text")
    sampled_total = c.u32()
    sampled = blocks(text, BLOCK_BITS, 2, None)
    sample_count = c.u32()
    if sample_count != (text - 1) // rate + 1 or sampled_total != sample_count:
        raise c.fail("sample count does not match the rate")
    samples = blocks(sample_count, VALUE_BLOCK_INTS, 0, None)
    if c.u32() != rows:
        raise c.fail("null-rows vector length differs from the row count")
    null_count = c.u32()
    nulls = blocks(rows, BLOCK_BITS, 2, None)
    if c.u32() != text:
        raise c.fail("row-boundary vector length differs from the text")
    if c.u32() != rows:
        raise c.fail("row boundaries do not match the row count")
    bounds = blocks(text, BLOCK_BITS, 2, None)
    pages: list[BlockInfo] = []
    if footer.flags & VERIFICATION_PAGES:   # newer Java: row values in pages after the row boundaries
        first = 0
        for _ in range(c.u32()):
            head = c.u32s(2)
            info = c.block_info()
            check_block(info, start, footer.directory.offset, MAX_VERIFICATION_BLOCK, path=path,
                        block=f"{name} directory")
            if head[0] != first or head[1] <= 0 or info.offset != expected[0]:
                raise c.fail("verification pages out of order")
            first += head[1]
            expected[0] += info.stored
            pages.append(info)
        if first != rows:
            raise c.fail("verification pages do not cover the rows")
    if c.pos != len(data) or expected[0] != footer.directory.offset:
        raise c.fail("directory has trailing bytes or the payload has gaps")
    return Directory(rows, text, rate, levels, alphabet, b2s, cum, wavelets, sampled, sample_count, samples, nulls,
                     null_count, bounds, pages)
