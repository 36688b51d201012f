"""Our zstd/lz4 files decode with the codec libraries directly, walked by a parser written here from spec §2."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import lz4.block
import pytest
import zstandard
from pyroaring import BitMap64

from index_format import parse_type, write_index_bytes
from index_format.options import IndexOptions

from .oracle import expected_sets
from .vectors import load_rows
from tests.data import GLOBAL_INDEX

_VECTORS = GLOBAL_INDEX


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return out, pos


def _block(data: bytes, off: int, length: int) -> tuple[bytes, int]:
    stored = data[off:off + length]
    type_id = data[off + length]
    crc = struct.unpack("<I", data[off + length + 1:off + length + 5])[0]
    assert crc == zlib.crc32(stored + bytes([type_id]))
    if type_id == 0:
        return stored, 0
    n, pos = _varint(stored, 0)
    payload = stored[pos:]
    if type_id == 1:
        out = zstandard.ZstdDecompressor().decompressobj().decompress(payload)
    else:
        assert type_id == 2
        clen, olen = struct.unpack("<ii", payload[:8])
        assert (clen, olen) == (len(payload) - 8, n)
        out = lz4.block.decompress(payload[8:], uncompressed_size=n)
    assert len(out) == n
    assert len(stored) < n - n // 8  # spec §2.4 keep-uncompressed rule
    return out, type_id


def _entries(body: bytes) -> list[tuple[bytes, int, int]]:
    count, pos = _varint(body, 0)
    out = []
    for _ in range(count):
        klen, pos = _varint(body, pos)
        key = body[pos:pos + klen]
        off, pos = _varint(body, pos + klen)
        length, pos = _varint(body, pos)
        out.append((key, off, length))
    assert pos == len(body)
    return out


@pytest.mark.parametrize("codec,level", [("zstd", 1), ("zstd", 9), ("lz4", 1)])
def test_compressed_file_decodes_independently(codec: str, level: int) -> None:
    rows = load_rows(_VECTORS / "java" / "str_many.tsv", "string")
    sets, nulls, _, _ = expected_sets("string", rows)
    data, _ = write_index_bytes([v for _, v in rows], [r for r, _ in rows], parse_type("string"),
                                IndexOptions(compression=codec, compression_level=level,
                                             dictionary_block_size=4096))
    footer = struct.unpack(">qiqiqiiii", data[-48:])
    assert footer[-2:] == (1, 0x42474958)
    index_body, _ = _block(data, footer[4], footer[5])
    got = {}
    types = set()
    for _, off, length in _entries(index_body):
        body, type_id = _block(data, off, length)
        types.add(type_id)
        for key, boff, blen in _entries(body):
            got[key.decode()] = set(BitMap64.deserialize(data[boff:boff + blen]))
    assert types == {1 if codec == "zstd" else 2}
    assert got == sets
    assert set(BitMap64.deserialize(data[footer[0]:footer[0] + footer[1]])) == nulls
