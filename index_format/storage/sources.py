"""RangeSource, the reader's port to one immutable file, and its implementations.

Bytes in memory, a local file (positional reads on one descriptor), an fsspec file (one ranged GET
per read) and a size override. Imports only `index_format.errors` and the standard library.
"""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from index_format.errors import (
    BgixError,
    CorruptFileError,
    StorageUnavailableError,
    TruncatedFileError,
)

__all__ = ["PATH_ERRORS", "BytesSource", "FsspecSource", "LocalSource", "RangeSource", "SizedSource",
           "check_range", "guard", "read_exact"]

# Errors that mean "this path", not "the store": they propagate unchanged.
PATH_ERRORS = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)


@runtime_checkable
class RangeSource(Protocol):
    """Random access to one immutable file; what the index reader consumes."""

    name: str
    size: int

    def read(self, offset: int, length: int) -> bytes:
        """Exactly `length` bytes at `offset`. Raises TruncatedFileError if the file is shorter."""
        ...


def check_range(name: str, size: int | None, offset: int, length: int) -> None:
    """Reject negative ranges and (when `size` is known) ranges past the end.

    Raises:
        CorruptFileError: negative offset or length.
        TruncatedFileError: offset + length > size.
    """
    if offset < 0 or length < 0:
        raise CorruptFileError(f"negative read range ({offset}, {length})", path=name, offset=offset)
    if size is not None and offset + length > size:
        raise TruncatedFileError(
            f"read of {length} bytes at offset {offset} goes past the end of the file ({size} bytes)",
            path=name, offset=offset,
        )


@contextlib.contextmanager
def guard(path: str, op: str) -> Iterator[None]:
    """Let path errors and our own errors through; anything else from the store → unavailable."""
    try:
        yield
    except (*PATH_ERRORS, BgixError):
        raise
    except PermissionError as exc:
        raise StorageUnavailableError(f"{op} {path!r}: permission denied ({exc})") from exc
    except Exception as exc:  # fsspec backends raise many unrelated types (botocore, aiohttp, OSError)
        raise StorageUnavailableError(f"{op} {path!r} failed: {type(exc).__name__}: {exc}") from exc


class BytesSource:
    """A RangeSource over bytes already in memory (tests, small files, the fuzz harness)."""

    def __init__(self, data: bytes | bytearray | memoryview, name: str = "<bytes>") -> None:
        self._data = bytes(data)
        self.name = name
        self.size = len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        check_range(self.name, self.size, offset, length)
        return self._data[offset:offset + length]


class LocalSource:
    """RangeSource over a local file: one descriptor kept open, positional reads (thread-safe)."""

    def __init__(self, path: str, size: int) -> None:
        self.name = path
        self.size = size
        self._fd: int | None = None
        self._lock = threading.Lock()

    def _descriptor(self) -> int:
        fd = self._fd
        if fd is None:
            with self._lock:
                if self._fd is None:
                    self._fd = os.open(self.name, os.O_RDONLY)
                fd = self._fd
        return fd

    def read(self, offset: int, length: int) -> bytes:
        check_range(self.name, self.size, offset, length)
        if length == 0:
            return b""
        try:
            data = os.pread(self._descriptor(), length, offset)
        except PATH_ERRORS:
            raise
        except OSError as exc:
            raise StorageUnavailableError(f"reading {self.name!r} failed: {exc}") from exc
        if len(data) != length:
            raise TruncatedFileError(
                f"expected {length} bytes at offset {offset}, the file has only {len(data)}",
                path=self.name, offset=offset,
            )
        return data

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self) -> None:
        # A raw descriptor is not closed by the garbage collector: a reader a cache evicts would leak it.
        with contextlib.suppress(Exception):
            self.close()

    def __getstate__(self) -> dict[str, object]:
        return {"name": self.name, "size": self.size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"], state["size"])  # type: ignore[misc]  # unpickling reruns __init__


class FsspecSource:
    """RangeSource over an object store: `fetch(url, offset, length)` is one ranged GET."""

    def __init__(self, fetch: Callable[[str, int, int], bytes], path: str, size: int) -> None:
        self._fetch = fetch
        self.name = path
        self.size = size

    def read(self, offset: int, length: int) -> bytes:
        check_range(self.name, self.size, offset, length)
        if length == 0:
            return b""
        return self._fetch(self.name, offset, length)

    def close(self) -> None:
        """Nothing to release; present so callers can close any source."""


def read_exact(source: RangeSource, offset: int, length: int, block: str) -> bytes:
    """Exactly `length` bytes at `offset` of `source`, for the part of an index file named `block` (its errors
    name the file and the block).

    Raises:
        CorruptFileError: the range lies outside the file.
        TruncatedFileError: the source returned fewer bytes.
    """
    if offset < 0 or length < 0 or offset + length > source.size:
        raise CorruptFileError(f"{block} ({offset}+{length}) lies outside the file ({source.size} bytes)",
                               path=source.name, block=block, offset=offset)
    try:
        data = source.read(offset, length)
    except TruncatedFileError as exc:
        raise TruncatedFileError(exc.reason, path=source.name, block=block, offset=offset) from None
    if len(data) != length:
        raise TruncatedFileError(f"short read: {len(data)} of {length} bytes", path=source.name,
                                 block=block, offset=offset)
    return data


class SizedSource:
    """Use the manifest's size (spec §2.2) for a source whose own size differs."""

    def __init__(self, inner: RangeSource, size: int) -> None:
        self.inner, self.name, self.size = inner, inner.name, size

    def read(self, offset: int, length: int) -> bytes:
        if offset + length > self.size:
            raise TruncatedFileError("read past the recorded file size", path=self.name, offset=offset)
        return self.inner.read(offset, length)
