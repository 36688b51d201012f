"""Storage: every byte bgix reads or writes, confined to its roots (local paths with os, URLs with fsspec).

The only module that imports fsspec. Missing files raise the built-in FileNotFoundError (callers
decide whether that is an error); a store that does not answer raises StorageUnavailableError;
paths outside the roots raise PathNotAllowedError.
"""
from __future__ import annotations

import contextlib
import os
import posixpath
import threading
from collections.abc import Sequence
from typing import Any


from index_format.errors import CorruptFileError, PathNotAllowedError, StorageUnavailableError, TruncatedFileError
from index_format.storage import local
from index_format.storage.paths import LOCAL, Roots, normalize_location, protocol_of
from index_format.storage.sources import FsspecSource, LocalSource, RangeSource, SizedSource, check_range, guard

__all__ = ["FsspecStorage", "Storage", "as_source", "open_file"]

# One lock per process makes check-then-put atomic for memory:// (tests) — not across processes.
_MEMORY_LOCK = threading.Lock()


class Storage:
    """File access confined to a root (local path or fsspec URL) plus optional extra roots.

    Local paths are handled with the os module (atomic rename, O_EXCL, hard links); URLs with
    fsspec, passing `storage_options` (e.g. ``{"client_kwargs": {"endpoint_url": ...}}``).
    Resolved local paths are absolute, symlink-free paths; resolved URLs are ``proto://path``.
    """

    def __init__(self, root: str, allowed_roots: Sequence[str] = (),
                 storage_options: dict[str, Any] | None = None) -> None:
        self.storage_options: dict[str, Any] = dict(storage_options or {})
        self.roots = Roots(root, allowed_roots)
        self.root: str = self.roots.root
        self.allowed_roots: tuple[str, ...] = self.roots.allowed
        self._fs_cache: dict[str, tuple[int, Any]] = {}

    # -- configuration ---------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """Plain, picklable description (it includes storage_options, i.e. credentials if any)."""
        return {"root": self.root, "allowed_roots": list(self.allowed_roots),
                "storage_options": dict(self.storage_options)}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Storage:
        return cls(config["root"], config.get("allowed_roots", ()), config.get("storage_options"))

    def __getstate__(self) -> dict[str, Any]:
        # fsspec instances hold sockets and event loops: rebuild them in the worker.
        return self.to_config()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"], state.get("allowed_roots", ()),  # type: ignore[misc]  # unpickling reruns __init__
                      state.get("storage_options"))

    def __repr__(self) -> str:
        return f"Storage(root={self.root!r}, allowed_roots={list(self.allowed_roots)!r})"

    # -- paths -----------------------------------------------------------------------------
    def resolve(self, path: str) -> str:
        """Absolute path or URL for `path`; relative paths (and '' for the root) are taken under the root.

        Raises:
            PathNotAllowedError: the path escapes every root, uses another protocol, or is malformed.
        """
        return self.roots.resolve(path)

    def join(self, base: str, *parts: str) -> str:
        """`base` joined with relative `parts`, resolved (so it is checked against the roots)."""
        return self.resolve(posixpath.join(self.resolve(base), *parts))

    def relative(self, path: str) -> str:
        """`path` relative to the root (for catalog documents); raises if it is not under the root."""
        return self.roots.relative(path)

    # -- fsspec ----------------------------------------------------------------------------
    def _fs(self, protocol: str) -> Any:
        cached = self._fs_cache.get(protocol)
        pid = os.getpid()
        if cached is not None and cached[0] == pid:
            return cached[1]
        try:
            import fsspec   # only for object stores: local paths never load it (or asyncio)

            fs = fsspec.filesystem(protocol, **self.storage_options)
        except ImportError as exc:
            raise StorageUnavailableError(
                f"no file system for {protocol!r}: {exc}; install the matching fsspec backend "
                f"(e.g. pip install 'bgix[s3]')") from exc
        except Exception as exc:
            raise StorageUnavailableError(f"cannot create file system {protocol!r}: {exc}") from exc
        self._fs_cache[protocol] = (pid, fs)
        return fs

    def _fs_read(self, url: str, offset: int, length: int) -> bytes:
        with guard(url, "read"):
            data = self._fs(protocol_of(url)).cat_file(url, start=offset, end=offset + length)
        if len(data) != length:
            raise TruncatedFileError(
                f"expected {length} bytes at offset {offset}, got {len(data)}", path=url, offset=offset)
        return bytes(data)

    # -- reads -----------------------------------------------------------------------------
    def size(self, path: str) -> int:
        """Size in bytes. Raises FileNotFoundError if missing."""
        full = self.resolve(path)
        if protocol_of(full) == LOCAL:
            with guard(full, "stat"):
                return os.stat(full).st_size
        with guard(full, "stat"):
            fs = self._fs(protocol_of(full))
            fs.invalidate_cache(full)
            return int(fs.size(full))

    def stat(self, path: str) -> tuple[int, float]:
        """(size in bytes, modification time in epoch seconds) — the catalog's change marker.

        Object stores report LastModified; when a backend has no timestamp, 0.0.
        Raises FileNotFoundError if missing.
        """
        full = self.resolve(path)
        if protocol_of(full) == LOCAL:
            with guard(full, "stat"):
                st = os.stat(full)
            return st.st_size, st.st_mtime
        with guard(full, "stat"):
            fs = self._fs(protocol_of(full))
            fs.invalidate_cache(full)
            info = fs.info(full)
        if info.get("type") == "directory":
            raise IsADirectoryError(full)
        mtime = info.get("LastModified") or info.get("mtime") or info.get("created")
        if hasattr(mtime, "timestamp"):
            mtime = mtime.timestamp()
        return int(info["size"]), float(mtime) if isinstance(mtime, (int, float)) else 0.0

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Exactly `length` bytes at `offset`; TruncatedFileError if the file is shorter."""
        full = self.resolve(path)
        check_range(full, None, offset, length)
        if protocol_of(full) == LOCAL:
            src = LocalSource(full, offset + length)
            try:
                return src.read(offset, length)
            finally:
                src.close()
        return self._fs_read(full, offset, length) if length else b""

    def read_bytes(self, path: str) -> bytes:
        """Whole file. Raises FileNotFoundError if missing."""
        full = self.resolve(path)
        if protocol_of(full) == LOCAL:
            with guard(full, "read"), open(full, "rb") as fh:
                return fh.read()
        with guard(full, "read"):
            return bytes(self._fs(protocol_of(full)).cat_file(full))

    def open_source(self, path: str, size: int | None = None) -> RangeSource:
        """A RangeSource for the reader. `size` is the manifest's file size (spec §2.2: the footer is
        located from the recorded size, not the file system's); when None the file is stat'ed."""
        full = self.resolve(path)
        if size is None:
            size = self.size(full)
        if size < 0:
            raise CorruptFileError(f"negative file size {size}", path=full)
        if protocol_of(full) == LOCAL:
            return LocalSource(full, size)
        return FsspecSource(self._fs_read, full, size)

    def exists(self, path: str) -> bool:
        full = self.resolve(path)
        if protocol_of(full) == LOCAL:
            return os.path.exists(full)
        with guard(full, "exists"):
            fs = self._fs(protocol_of(full))
            fs.invalidate_cache(full)  # s3fs lists are cached; other processes write too
            return bool(fs.exists(full))

    def list(self, prefix: str, recursive: bool = False) -> list[str]:
        """Full paths of the entries directly inside directory `prefix` (files and directories),
        sorted; with recursive=True every file below it. A missing directory gives []."""
        full = self.resolve(prefix)
        if protocol_of(full) == LOCAL:
            return local.list_dir(full, recursive)
        proto = protocol_of(full)
        fs = self._fs(proto)
        with guard(full, "list"):
            fs.invalidate_cache(full)
            try:
                names = fs.find(full) if recursive else fs.ls(full, detail=False)
            except FileNotFoundError:
                return []
        out = {normalize_location(proto, n, n) for n in names}
        out.discard(full)
        return sorted(out)

    # -- writes ----------------------------------------------------------------------------
    def write_atomic(self, path: str, data: bytes) -> None:
        """Replace `path` with `data` so readers see the old or the new content, never a mix.

        Local: temp file in the same directory, fsync, os.replace. Object stores: one PUT (atomic).
        """
        full = self.resolve(path)
        if protocol_of(full) == LOCAL:
            with guard(full, "write"):
                local.replace_atomic(full, data)
            return
        with guard(full, "write"):
            self._fs(protocol_of(full)).pipe_file(full, bytes(data))

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Create `path` with `data` unless it exists; True if we created it (commit CAS).

        Local: the complete temp file is hard-linked into place (os.link fails atomically if the
        name exists), falling back to O_CREAT|O_EXCL where hard links are not supported.
        memory://: atomic within this process. s3://: a conditional PUT (If-None-Match: *), atomic
        on AWS S3 and moto; S3-compatible stores that ignore the header, and the other object
        stores, get check-then-put: two writers racing in the same instant can both "win"
        (documented weakness — run one build per index at a time there).
        """
        full = self.resolve(path)
        proto = protocol_of(full)
        if proto == LOCAL:
            with guard(full, "write"):
                return local.create_exclusive(full, data)
        fs = self._fs(proto)
        lock = _MEMORY_LOCK if proto == "memory" else contextlib.nullcontext()
        with lock, guard(full, "write"):
            fs.invalidate_cache(full)
            if fs.exists(full):
                return False
            try:
                if proto in ("s3", "s3a"):
                    fs.pipe_file(full, bytes(data), mode="create")
                else:
                    fs.pipe_file(full, bytes(data))
            except FileExistsError:
                return False
            return True

    def delete(self, path: str, recursive: bool = False) -> None:
        """Remove a file (or a directory tree with recursive=True). Missing paths are ignored,
        so garbage collection can be re-run."""
        full = self.resolve(path)
        if full in self.roots.all and recursive:
            raise PathNotAllowedError(f"refusing to delete the root {full!r}")
        if protocol_of(full) == LOCAL:
            with guard(full, "delete"):
                local.delete(full, recursive)
            return
        fs = self._fs(protocol_of(full))
        with guard(full, "delete"):
            try:
                fs.rm(full, recursive=recursive)
            except FileNotFoundError:
                pass


FsspecStorage = Storage


def as_source(source: RangeSource | str | os.PathLike[str], *, storage: Storage | None = None,
              size: int | None = None) -> RangeSource:
    """What an index reader reads: `source` itself (with the manifest's `size` when that differs), or the
    file at a path, resolved by `storage` when given (its roots apply), else a local file.

    Raises:
        FileNotFoundError: a path that does not exist. PathNotAllowedError: a path outside the roots.
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        return storage.open_source(path, size) if storage is not None else open_file(path, size)
    if size is not None and size != source.size:
        return SizedSource(source, size)
    return source


def open_file(path: str, size: int | None = None) -> RangeSource:
    """A RangeSource over one local file outside any warehouse (CLI inspection, tests, Java vectors).

    The file's own directory is the root, so the usual resolution applies. `size` as in
    Storage.open_source. Raises FileNotFoundError if the file is missing.
    """
    real = os.path.realpath(os.fspath(path))
    return Storage(os.path.dirname(real)).open_source(real, size)
