"""Open index files are bounded: a cache bounded in bytes also bounds its entry count, and a LocalSource that a
cache evicts closes its descriptor (the soak found descriptors growing with every incremental build)."""
from __future__ import annotations

import gc
import os
from pathlib import Path

from index_format.lru import ByteLRU
from index_format.storage.sources import LocalSource


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_max_entries_bounds_the_count_whatever_the_bytes() -> None:
    lru: ByteLRU[str] = ByteLRU(1 << 30, lambda v: 1, max_entries=3)
    for i in range(10):
        lru.get_or_load((f"f{i}",), lambda i=i: f"v{i}")
    assert len(lru) == 3
    assert lru.get(("f9",)) == "v9" and lru.get(("f0",)) is None


def test_evicted_sources_close_their_descriptors(tmp_path: Path) -> None:
    files = []
    for i in range(50):
        p = tmp_path / f"{i}.bin"
        p.write_bytes(bytes(range(16)))
        files.append(p)
    lru: ByteLRU[LocalSource] = ByteLRU(1 << 30, lambda s: 1, max_entries=5)
    before = _open_fds()
    for p in files:
        source = lru.get_or_load((str(p),), lambda p=p: LocalSource(str(p), 16))
        assert source.read(0, 4) == bytes(range(4))   # opens its descriptor
    del source
    gc.collect()
    assert _open_fds() - before <= 5
