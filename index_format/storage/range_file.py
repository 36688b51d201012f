"""A read-only, seekable file object over a Storage's range reads, for readers that want a file (pyarrow's)."""
from __future__ import annotations

import io
from typing import Any

from index_format.storage.store import Storage


class RangeFile(io.RawIOBase):
    """A read-only, seekable file object over Storage range reads (for pyarrow readers)."""

    def __init__(self, storage: Storage, path: str, size: int | None = None) -> None:
        super().__init__()
        self._src = storage.open_source(path, size)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._src.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), max(0, self._src.size - self._pos))
        if n == 0:
            return 0
        data = self._src.read(self._pos, n)
        buffer[:n] = data
        self._pos += n
        return n
