"""Corrupt or truncated btree files raise IndexFormatError subclasses naming the file and the part; a flipped bit
anywhere gives an error or the right rows, never wrong rows."""
from __future__ import annotations

import random
import struct
import zlib

import pytest

from index_format.btree.btree_reader import open_btree_index
from index_format.btree.btree_writer import write_btree_bytes
from index_format.errors import (
    ChecksumError, CorruptFileError, IndexFormatError, TruncatedFileError, UnsupportedVersionError,
)
from index_format.layout import BTREE_FOOTER, BTREE_FOOTER_SIZE
from index_format.storage import BytesSource, SizedSource
from index_format.types import parse_type

BIG = parse_type("bigint")
KEYS = [None if i % 11 == 0 else (i % 97) * 1_000_003 - 40_000_000 for i in range(1200)]
RIDS = list(range(0, 3600, 3))


def _file(**opts: str) -> bytes:
    return write_btree_bytes(KEYS, RIDS, BIG, {"btree-index.block-size": "256", **opts})[0]


def _open(data: bytes | bytearray):  # type: ignore[no-untyped-def]
    return open_btree_index(BytesSource(bytes(data), name="bad.index"), BIG)


def _ask_everything(data: bytes | bytearray) -> tuple:
    r = _open(data)
    return (frozenset(r.eq(KEYS[1])), frozenset(r.isin([KEYS[2], KEYS[50], 7])), frozenset(r.range(-1, 10**8)),
            frozenset(r.null_rows()), frozenset(r.non_null_rows()),
            tuple((k, tuple(ids.tolist())) for k, ids in r.raw_entries()))


def _footer(data: bytes) -> list[int]:
    return list(BTREE_FOOTER.unpack(data[-BTREE_FOOTER_SIZE:]))


def _with_footer(data: bytes, fields: list[int]) -> bytes:
    return data[:-BTREE_FOOTER_SIZE] + BTREE_FOOTER.pack(*fields)


def _first_block(data: bytes) -> tuple[int, int]:
    r = _open(data)
    _, off, size = r.block_info()[0]
    return off, size


def _recrc(data: bytearray, off: int, size: int) -> None:
    """Make the trailer of the block at (off, size) valid again after its bytes were changed."""
    data[off + size + 1:off + size + 5] = struct.pack("<I", zlib.crc32(bytes(data[off:off + size + 1])))


def test_truncated_and_foreign_footers() -> None:
    data = _file()
    with pytest.raises(TruncatedFileError) as e:
        _open(data[:40])
    assert e.value.path == "bad.index" and e.value.block == "footer"
    with pytest.raises(CorruptFileError, match="bad magic") as e:
        open_btree_index(SizedSource(BytesSource(data, name="bad.index"), len(data) - 10), BIG)
    assert e.value.block == "footer"
    f = _footer(data)
    f[-1] ^= 1
    with pytest.raises(CorruptFileError, match="not a btree index file"):
        _open(_with_footer(data, f))
    for version in (0, 3, 1 << 20):
        f = _footer(data)
        f[-2] = version
        with pytest.raises(UnsupportedVersionError):
            _open(_with_footer(data, f))
    f = _footer(data)
    f[3] = len(data)                                            # index block past the end
    with pytest.raises(CorruptFileError, match="index block") as e:
        _open(_with_footer(data, f))
    assert e.value.block == "footer"
    f = _footer(data)
    f[0:3] = [0, 0, 5]                                          # a bloom filter of 0 bytes
    with pytest.raises(CorruptFileError, match="bloom filter"):
        _open(_with_footer(data, f))


def test_checksums_name_the_part() -> None:
    data = _file()
    r = _open(data)
    off, size = _first_block(data)
    bad = bytearray(data)
    bad[off + 3] ^= 0x40
    with pytest.raises(ChecksumError) as e:
        _open(bad).eq(-40_000_000)                               # the smallest key: in the first block
    assert e.value.block == f"data block at {off}" and e.value.path == "bad.index"
    f = r.footer
    bad = bytearray(data)
    bad[f.index_offset + 2] ^= 1
    with pytest.raises(ChecksumError) as e:
        _open(bad).eq(KEYS[1])
    assert e.value.block == "index block"
    for where in (f.null_offset + 9, f.null_offset + f.null_length + 1):   # the bitmap, then its CRC
        bad = bytearray(data)
        bad[where] ^= 4
        with pytest.raises(ChecksumError) as e:
            _open(bad).null_rows()
        assert e.value.block == "null bitmap"


def test_unknown_compression_byte_is_named() -> None:
    data = _file()
    off, size = _first_block(data)
    bad = bytearray(data)
    bad[off + size] = 7
    _recrc(bad, off, size)
    with pytest.raises(CorruptFileError, match="unknown compression type 7") as e:
        _open(bad).non_null_rows()
    assert e.value.block == f"data block at {off}"


def test_bad_block_bodies_with_valid_checksums() -> None:
    data = _file()
    off, size = _first_block(data)
    bad = bytearray(data)
    bad[off + size - 1] = 9                                     # alignment byte
    _recrc(bad, off, size)
    with pytest.raises(CorruptFileError, match="alignment") as e:
        _open(bad).non_null_rows()
    assert e.value.block == f"data block at {off}"
    # the first key made larger than the second: keys out of order
    blk = _open(data)._block(0)
    bad = bytearray(data)
    k0 = off + int(blk.key_start[0])
    bad[k0:k0 + 8] = struct.pack("<q", 1 << 62)
    _recrc(bad, off, size)
    with pytest.raises(CorruptFileError, match="not strictly increasing"):
        _open(bad).non_null_rows()
    # a row-id count of 0
    bad = bytearray(data)
    bad[off + int(blk.val_start[0])] = 0
    _recrc(bad, off, size)
    with pytest.raises(CorruptFileError, match="count"):
        _open(bad).non_null_rows()


@pytest.mark.parametrize("opts", [{}, {"btree-index.compression": "zstd"}, {"btree-index.compression": "lz4"}])
def test_a_flipped_bit_never_gives_wrong_rows(opts: dict[str, str]) -> None:
    data = _file(**opts)
    truth = _ask_everything(data)
    rng = random.Random(len(data))
    positions = rng.sample(range(len(data)), min(250, len(data)))
    errors = 0
    for pos in positions:
        bad = bytearray(data)
        bad[pos] ^= 1 << rng.randrange(8)
        try:
            got = _ask_everything(bad)
        except IndexFormatError as exc:
            assert exc.path == "bad.index" and exc.block
            errors += 1
            continue
        assert got == truth, pos
    assert errors > len(positions) * 0.9
