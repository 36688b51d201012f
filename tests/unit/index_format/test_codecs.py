"""Trailed blocks (spec §2.4): CRC, keep-uncompressed rule, codec framing, malformed input → typed errors."""
from __future__ import annotations

import random
import struct
import zlib

import lz4.block
import pytest
import zstandard

from index_format.codecs import (
    LzoError, decode_block, encode_block, encode_block_with_trailer, lzo_decompress, trailer,
)
from index_format.errors import ChecksumError, CorruptFileError, InvalidOptionError
from index_format.layout import read_varint, varint, varint_len


def _with_trailer(stored: bytes, type_id: int) -> bytes:
    return stored + bytes([type_id]) + struct.pack("<I", zlib.crc32(stored + bytes([type_id])))


@pytest.mark.parametrize("n,hexbytes", [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"),
                                        (16382, "fe7f"), (16384, "808001"), (2**31 - 1, "ffffffff07"),
                                        (2**63 - 1, "ffffffffffffffff7f")])
def test_varint_examples(n: int, hexbytes: str) -> None:
    # spec §0 examples
    assert varint(n).hex() == hexbytes
    assert varint_len(n) == len(hexbytes) // 2
    assert read_varint(bytes.fromhex(hexbytes), 0) == (n, len(hexbytes) // 2)


def test_varint_rejects_long_and_truncated() -> None:
    with pytest.raises(CorruptFileError):
        read_varint(b"\xff" * 11, 0)
    with pytest.raises(CorruptFileError):
        read_varint(b"\x80\x80", 0)
    with pytest.raises(CorruptFileError):
        read_varint(varint(1000), 0, limit=999)


def test_golden_trailer_crc() -> None:
    # spec §12.1: dictionary block body and its trailer
    body = bytes.fromhex("0204") + b"even" + bytes.fromhex("002003") + b"odd" + bytes.fromhex("2020")
    assert trailer(body, 0).hex() == "005268fc14"
    assert decode_block(body + trailer(body, 0)) == body


def test_keep_uncompressed_rule() -> None:
    small = b"abcdefghijklmno"
    assert encode_block(small, "zstd", 1) == (small, 0)
    rnd = random.Random(7).randbytes(5000)  # incompressible, and the same bytes every run
    assert encode_block(rnd, "lz4", 1) == (rnd, 0)
    text = b"key-000001" * 500
    for codec, type_id in (("zstd", 1), ("lz4", 2)):
        stored, t = encode_block(text, codec, 3)
        n = len(text)
        assert t == type_id and len(stored) < n - n // 8
        assert decode_block(stored + trailer(stored, t)) == text


def test_lzo_cannot_be_written() -> None:
    with pytest.raises(InvalidOptionError):
        encode_block(b"x" * 100, "lzo", 1)


def test_zstd_frame_with_and_without_content_size() -> None:
    body = b"0123456789" * 300
    for write_size in (True, False):
        frame = zstandard.ZstdCompressor(level=3, write_content_size=write_size).compress(body)
        assert decode_block(_with_trailer(varint(len(body)) + frame, 1)) == body


def test_crc_mismatch_and_unknown_type() -> None:
    data = bytearray(encode_block_with_trailer(b"hello world", "none")[0])
    data[0] ^= 1
    with pytest.raises(ChecksumError):
        decode_block(bytes(data), path="f", block="dictionary block 0")
    with pytest.raises(CorruptFileError, match="unknown compression"):
        decode_block(_with_trailer(b"abc", 9))
    with pytest.raises(CorruptFileError):
        decode_block(b"\x00\x01")


def test_size_mismatches_and_bombs() -> None:
    body = b"abc" * 1000
    raw = lz4.block.compress(body, store_size=False)
    good = varint(len(body)) + struct.pack("<ii", len(raw), len(body)) + raw
    assert decode_block(_with_trailer(good, 2)) == body
    lying = varint(len(body) + 1) + struct.pack("<ii", len(raw), len(body) + 1) + raw
    with pytest.raises(CorruptFileError):
        decode_block(_with_trailer(lying, 2))
    header_mismatch = varint(len(body)) + struct.pack("<ii", len(raw), len(body) - 1) + raw
    with pytest.raises(CorruptFileError):
        decode_block(_with_trailer(header_mismatch, 2))
    # declared size far above the bomb guard: rejected before any allocation
    with pytest.raises(CorruptFileError):
        decode_block(_with_trailer(varint(1 << 40) + b"\x00" * 16, 1))
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(b"\x00" * 1_000_000)
    with pytest.raises(CorruptFileError):
        decode_block(_with_trailer(varint(1000) + frame, 1))
    with pytest.raises(CorruptFileError):
        decode_block(_with_trailer(varint(10) + b"garbage!!", 1))


def test_lzo_literal_only_stream_and_garbage() -> None:
    # Hand-assembled LZO1X stream: first byte 17+n means n literals, then the end marker 0x11 00 00.
    payload = bytes([17 + 5]) + b"hello" + b"\x11\x00\x00"
    assert lzo_decompress(payload, 5) == b"hello"
    framed = varint(5) + struct.pack("<ii", len(payload), 5) + payload
    assert decode_block(_with_trailer(framed, 3)) == b"hello"
    with pytest.raises(LzoError):
        lzo_decompress(payload, 4)
    with pytest.raises(LzoError):
        lzo_decompress(b"\x00", 10)
    for seed in range(50):
        junk = random.Random(seed).randbytes(40)
        try:
            lzo_decompress(junk, 100)
        except LzoError:
            pass
