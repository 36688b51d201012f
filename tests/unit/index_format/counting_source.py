"""An in-memory RangeSource that records every read: how the lazy readers' tests count what a question reads."""
from __future__ import annotations

from index_format.storage import BytesSource


class CountingSource(BytesSource):
    def __init__(self, data: bytes) -> None:
        super().__init__(data, name="mem.index")
        self.calls: list[tuple[int, int]] = []

    def read(self, offset: int, length: int) -> bytes:
        self.calls.append((offset, length))
        return super().read(offset, length)
