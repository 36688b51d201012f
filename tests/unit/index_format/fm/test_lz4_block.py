"""The two implementations of pypaimon-rust's LZ4 block encoder (index_format/fm/lz4_block.py) write the same
bytes: the numba-compiled loop and the plain-Python one, over random, repetitive and fm-shaped inputs of every
length class (the fm golden files check the bytes against pypaimon-rust's own)."""
from __future__ import annotations

import random

import lz4.block
import numpy as np
import pytest

from index_format.fm import lz4_block
from index_format.fm.fm_writer import write_fm_bytes

numba = pytest.importorskip("numba")


def _inputs() -> list[bytes]:
    rng = random.Random(7)
    out = []
    for n in (0, 1, 5, 12, 13, 14, 15, 16, 19, 20, 31, 64, 100, 255, 256, 270, 1000, 4096, 33_000, 65_534):
        out.append(rng.randbytes(n))
        out.append(bytes(rng.choice(b"ab\x00\x01") for _ in range(n)))
        out.append(b"\x00" * n)
        out.append((b"abcdefgh" * (n // 8 + 1))[:n])
        words = np.zeros(-(-n // 8), dtype="<u8")   # sparse bits, as the fm bit vectors
        words[rng.sample(range(len(words)), len(words) // 5)] = 1 << rng.randrange(64)
        out.append(words.tobytes()[:n])
    return out


def test_the_compiled_loop_is_in_use() -> None:
    assert lz4_block.native_encoder() is not None


@pytest.mark.parametrize("data", _inputs(), ids=lambda d: str(len(d)))
def test_compiled_and_python_loops_write_the_same_bytes(data: bytes) -> None:
    got = lz4_block.compress_block(data)
    assert got == lz4_block.compress_block_python(data)
    assert lz4.block.decompress(got, uncompressed_size=len(data)) == data


def test_an_fm_file_is_the_same_bytes_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    rows = [None if rng.random() < 0.05 else " ".join(rng.choice(["vip", "user_12", "ab%", "é"])
                                                       for _ in range(rng.randint(0, 4))) for _ in range(3000)]
    opts = {"fm-index.partition-row-count": "700", "fm-index.sa-sample-rate": "4"}
    native = write_fm_bytes(rows, 5, opts)
    monkeypatch.setattr(lz4_block, "native_encoder", lambda: None)
    assert write_fm_bytes(rows, 5, opts) == native
