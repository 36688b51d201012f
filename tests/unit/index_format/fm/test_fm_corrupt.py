"""Corrupt, truncated or foreign fm files raise IndexFormatError subclasses naming the file and the part (the
partition and its block); a flipped byte anywhere gives an error or the right rows, never wrong rows."""
from __future__ import annotations

import random

import pytest
from pyroaring import BitMap64

from index_format.errors import ChecksumError, CorruptFileError, IndexFormatError, TruncatedFileError
from index_format.fm.fm_reader import FMIndexReader, open_fm_index
from index_format.fm.fm_writer import write_fm_bytes
from index_format.storage import BytesSource, SizedSource

ROWS = [None if i % 13 == 0 else f"row-{i % 37}-{'vip' if i % 5 == 0 else 'x'}" for i in range(400)]


def _file(codec: str = "none") -> bytes:
    return write_fm_bytes(ROWS, 0, {"fm-index.partition-row-count": "100", "fm-index.compression": codec})[0]


def _open(data: bytes | bytearray) -> FMIndexReader:
    return open_fm_index(BytesSource(bytes(data), name="bad.index"), "string")


def _truth() -> BitMap64:
    return BitMap64(i for i, v in enumerate(ROWS) if v is not None and "vip" in v)


def test_a_corrupt_block_names_the_file_partition_and_block() -> None:
    data = bytearray(_file())
    good = _open(data)
    p = good.partitions[2]
    data[p.start + 40] ^= 0xFF   # inside partition 2's first wavelet block
    bad = _open(data)
    with pytest.raises(ChecksumError) as e:
        bad.contains("vip")
    assert e.value.path == "bad.index" and e.value.block == "partition 2 wavelet level 0 block 0"
    assert "bad.index" in str(e.value) and "partition 2" in str(e.value)


def test_bad_magic_and_truncation_are_named() -> None:
    data = _file()
    with pytest.raises(CorruptFileError, match="bad footer magic") as e:
        _open(data[:-8] + b"XXXX" + data[-4:])
    assert e.value.block == "container footer"
    with pytest.raises(TruncatedFileError):
        _open(data[:30])
    with pytest.raises(IndexFormatError):
        _open(data[:-100])
    with pytest.raises(IndexFormatError):   # the manifest says the file is longer than it is
        open_fm_index(SizedSource(BytesSource(data[:-1], name="short.index"), len(data)), "string").contains("x")


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_a_flipped_byte_anywhere_never_gives_wrong_rows(codec: str) -> None:
    data = _file(codec)
    rng = random.Random(codec)
    for _ in range(150):
        bad = bytearray(data)
        bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        try:
            got = _open(bad).contains("vip")
        except IndexFormatError:
            continue
        assert got == _truth()


def test_our_lz4_blocks_decode_with_liblz4() -> None:
    """The re-implemented encoder writes standard LZ4 blocks: liblz4 reads them back."""
    import lz4.block

    from index_format.fm.lz4_block import compress_block
    rng = random.Random(4)
    for n in (0, 5, 12, 13, 100, 4000, 33_000, 65_534, 70_000):
        data = bytes(rng.choice(b"abcab\x00\xff") for _ in range(n))
        assert lz4.block.decompress(compress_block(data), uncompressed_size=n) == data


def _with_verification_pages(data: bytes) -> bytes:
    """A one-partition file rewritten in newer Java's layout (feature flag 8): one page block of row values after
    the row-boundary blocks, listed at the end of the partition directory, flags 15 in both footers."""
    import struct as st

    from index_format.fm import fm_format as f
    r = _open(data)
    (p,) = r.partitions
    foot = f.decode_partition_footer(data[p.end - 64:p.end], path="x", offset=0, name="p")
    d = foot.directory
    directory = f.decode_block(data[d.offset:d.offset + d.stored], d, path="x", block="d")
    page_body = b"".join(st.pack(">i", 0) for _ in range(p.row_count))   # content is not read by bgix
    page = f.BlockInfo(d.offset, len(page_body), len(page_body), 0, f.crc(page_body, 0))
    directory += st.pack(">III", 1, 0, p.row_count) + page.pack()
    new_dir = f.BlockInfo(d.offset + len(page_body), len(directory), len(directory), 0, f.crc(directory, 0))
    flags = f.FEATURE_FLAGS | f.VERIFICATION_PAGES

    def footer(body: bytes) -> bytes:
        body = body[:44] + st.pack(">I", flags) + body[48:60]
        return body + st.pack(">I", f.crc(body, 0))
    part = data[:d.offset] + page_body + directory + footer(
        f.encode_partition_footer(new_dir, foot.first_row_id, foot.row_count, foot.text_length, foot.sample_rate))
    meta = f.encode_index_meta(f.IndexMeta(0, p.row_count, (f.PartitionMeta(0, len(part), 0, p.row_count),)))
    meta_info = f.BlockInfo(len(part), len(meta), len(meta), 0, f.crc(meta, 0))
    return part + meta + footer(f.encode_container_footer(meta_info, 0, p.row_count, 1))


def test_newer_java_files_with_verification_pages_are_read() -> None:
    data = write_fm_bytes(ROWS, 0, {"fm-index.compression": "none"})[0]
    java = _with_verification_pages(data)
    r = _open(java)
    assert r.contains("vip") == _truth() and r.values() == _open(data).values()
    page_at = _open(data).partitions[0].end - 64 - len(_directory(data))
    bad = bytearray(java)
    bad[page_at + 10] ^= 0x10
    with pytest.raises(ChecksumError) as e:
        _open(bad).contains("vip")
    assert e.value.block == "partition 0 verification page 0"


def _directory(data: bytes) -> bytes:
    from index_format.fm import fm_format as f
    p = _open(data).partitions[0]
    d = f.decode_partition_footer(data[p.end - 64:p.end], path="x", offset=0, name="p").directory
    return data[d.offset:d.offset + d.stored]
