"""Every byte bgix reads or writes goes through here: root checks, range reads, atomic writes.

The only module that imports fsspec; imports nothing else from bgix but `index_format.errors`.
Missing files raise the built-in FileNotFoundError (callers decide whether that is an error);
a store that does not answer raises StorageUnavailableError; paths outside the roots raise
PathNotAllowedError.
"""
from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import fsspec

from index_format.errors import (
    BgixError,
    CorruptFileError,
    PathNotAllowedError,
    StorageUnavailableError,
    TruncatedFileError,
)

__all__ = ["BytesSource", "FsspecStorage", "RangeSource", "Storage"]

# Protocols a root may use. http(s)/ftp and friends are never roots: an index must not make the
# service fetch arbitrary URLs.
_REMOTE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "hdfs", "memory"})
_LOCAL = "file"
_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# "scheme:" without "//" (file:/etc/passwd, http:x); two letters minimum so "C:" is not a scheme.
_SCHEME_ONLY_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
# Errors that mean "this path", not "the store": they propagate unchanged.
_PATH_ERRORS = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)
# One lock per process makes check-then-put atomic for memory:// (tests) — not across processes.
_MEMORY_LOCK = threading.Lock()


@runtime_checkable
class RangeSource(Protocol):
    """Random access to one immutable file; what the index reader consumes."""

    name: str
    size: int

    def read(self, offset: int, length: int) -> bytes:
        """Exactly `length` bytes at `offset`. Raises TruncatedFileError if the file is shorter."""
        ...


def _check_range(name: str, size: int | None, offset: int, length: int) -> None:
    if offset < 0 or length < 0:
        raise CorruptFileError(f"negative read range ({offset}, {length})", path=name, offset=offset)
    if size is not None and offset + length > size:
        raise TruncatedFileError(
            f"read of {length} bytes at offset {offset} goes past the end of the file ({size} bytes)",
            path=name, offset=offset,
        )


class BytesSource:
    """A RangeSource over bytes already in memory (tests, small files, the fuzz harness)."""

    def __init__(self, data: bytes | bytearray | memoryview, name: str = "<bytes>") -> None:
        self._data = bytes(data)
        self.name = name
        self.size = len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        _check_range(self.name, self.size, offset, length)
        return self._data[offset:offset + length]


class _LocalSource:
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
        _check_range(self.name, self.size, offset, length)
        if length == 0:
            return b""
        try:
            data = os.pread(self._descriptor(), length, offset)
        except _PATH_ERRORS:
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
        with contextlib.suppress(Exception):
            self.close()

    def __getstate__(self) -> dict[str, object]:
        return {"name": self.name, "size": self.size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"], state["size"])  # type: ignore[misc]


class _FsspecSource:
    """RangeSource over an fsspec file system: one ranged GET per read."""

    def __init__(self, storage: Storage, path: str, size: int) -> None:
        self._storage = storage
        self.name = path
        self.size = size

    def read(self, offset: int, length: int) -> bytes:
        _check_range(self.name, self.size, offset, length)
        if length == 0:
            return b""
        return self._storage._fs_read(self.name, offset, length)

    def close(self) -> None:
        """Nothing to release; present so callers can close any source."""


class Storage:
    """File access confined to a root (local path or fsspec URL) plus optional extra roots.

    Local paths are handled with the os module (atomic rename, O_EXCL, hard links); URLs with
    fsspec, passing `storage_options` (e.g. ``{"client_kwargs": {"endpoint_url": ...}}``).
    Resolved local paths are absolute, symlink-free paths; resolved URLs are ``proto://path``.
    """

    def __init__(self, root: str, allowed_roots: Sequence[str] = (),
                 storage_options: dict[str, Any] | None = None) -> None:
        self.storage_options: dict[str, Any] = dict(storage_options or {})
        self.root: str = _normalize_root(root)
        self.allowed_roots: tuple[str, ...] = tuple(_normalize_root(r) for r in allowed_roots)
        self._roots = (self.root, *self.allowed_roots)
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
        self.__init__(state["root"], state.get("allowed_roots", ()),  # type: ignore[misc]
                      state.get("storage_options"))

    def __repr__(self) -> str:
        return f"Storage(root={self.root!r}, allowed_roots={list(self.allowed_roots)!r})"

    # -- paths -----------------------------------------------------------------------------
    def resolve(self, path: str) -> str:
        """Absolute path or URL for `path`; relative paths (and '' for the root) are taken under the root.

        Raises:
            PathNotAllowedError: the path escapes every root, uses another protocol, or is malformed.
        """
        if not isinstance(path, str) or "\x00" in path:
            raise PathNotAllowedError(f"path {path!r} is not a valid path")
        if path in ("", "."):
            return self.root
        proto, rest = _split(path)
        if proto is None and not os.path.isabs(rest):
            return self._resolve_relative(path)
        candidate = _normalize_location(proto, rest, path)
        if _protocol_of(candidate) == _LOCAL:
            return self._check_local(candidate, path)
        for root in self._roots:
            if _is_under(candidate, root):
                return candidate
        raise PathNotAllowedError(self._outside_message(path))

    def join(self, base: str, *parts: str) -> str:
        """`base` joined with relative `parts`, resolved (so it is checked against the roots)."""
        return self.resolve(posixpath.join(self.resolve(base), *parts))

    def relative(self, path: str) -> str:
        """`path` relative to the root (for catalog documents); raises if it is not under the root."""
        full = self.resolve(path)
        if full == self.root:
            return ""
        if not _is_under(full, self.root):
            raise PathNotAllowedError(f"path {path!r} is not under the root {self.root!r}")
        base = self.root if self.root.endswith("/") else self.root + "/"
        return full[len(base):]

    def _resolve_relative(self, path: str) -> str:
        if _protocol_of(self.root) == _LOCAL:
            return self._check_local(os.path.normpath(os.path.join(self.root, path)), path)
        proto, base = _split(self.root)
        assert proto is not None
        candidate = _normalize_location(proto, posixpath.join(base, path), path)
        if not _is_under(candidate, self.root):
            raise PathNotAllowedError(self._outside_message(path))
        return candidate

    def _check_local(self, candidate: str, original: str) -> str:
        # Roots are stored as real paths; the decision is made on the path with every symlink
        # resolved, so a link inside a root cannot lead outside it (and an alias of a root works).
        local_roots = [r for r in self._roots if _protocol_of(r) == _LOCAL]
        real = os.path.realpath(candidate)
        if any(_is_under(real, r) for r in local_roots):
            return real
        if any(_is_under(candidate, r) for r in local_roots):
            raise PathNotAllowedError(
                f"path {original!r} resolves through a symlink to {real!r}, outside the allowed roots "
                f"{list(self._roots)}")
        raise PathNotAllowedError(self._outside_message(original))

    def _outside_message(self, path: str) -> str:
        return f"path {path!r} is outside the allowed roots {list(self._roots)}"

    # -- fsspec ----------------------------------------------------------------------------
    def _fs(self, protocol: str) -> Any:
        cached = self._fs_cache.get(protocol)
        pid = os.getpid()
        if cached is not None and cached[0] == pid:
            return cached[1]
        try:
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
        with _guard(url, "read"):
            data = self._fs(_protocol_of(url)).cat_file(url, start=offset, end=offset + length)
        if len(data) != length:
            raise TruncatedFileError(
                f"expected {length} bytes at offset {offset}, got {len(data)}", path=url, offset=offset)
        return bytes(data)

    # -- reads -----------------------------------------------------------------------------
    def size(self, path: str) -> int:
        """Size in bytes. Raises FileNotFoundError if missing."""
        full = self.resolve(path)
        if _protocol_of(full) == _LOCAL:
            with _guard(full, "stat"):
                return os.stat(full).st_size
        with _guard(full, "stat"):
            fs = self._fs(_protocol_of(full))
            fs.invalidate_cache(full)
            return int(fs.size(full))

    def stat(self, path: str) -> tuple[int, float]:
        """(size in bytes, modification time in epoch seconds) — the catalog's change marker.

        Object stores report LastModified; when a backend has no timestamp, 0.0.
        Raises FileNotFoundError if missing.
        """
        full = self.resolve(path)
        if _protocol_of(full) == _LOCAL:
            with _guard(full, "stat"):
                st = os.stat(full)
            return st.st_size, st.st_mtime
        with _guard(full, "stat"):
            fs = self._fs(_protocol_of(full))
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
        _check_range(full, None, offset, length)
        if _protocol_of(full) == _LOCAL:
            src = _LocalSource(full, offset + length)
            try:
                return src.read(offset, length)
            finally:
                src.close()
        return self._fs_read(full, offset, length) if length else b""

    def read_bytes(self, path: str) -> bytes:
        """Whole file. Raises FileNotFoundError if missing."""
        full = self.resolve(path)
        if _protocol_of(full) == _LOCAL:
            with _guard(full, "read"), open(full, "rb") as fh:
                return fh.read()
        with _guard(full, "read"):
            return bytes(self._fs(_protocol_of(full)).cat_file(full))

    def open_source(self, path: str, size: int | None = None) -> RangeSource:
        """A RangeSource for the reader. `size` is the manifest's file size (spec §2.2: the footer is
        located from the recorded size, not the file system's); when None the file is stat'ed."""
        full = self.resolve(path)
        if size is None:
            size = self.size(full)
        if size < 0:
            raise CorruptFileError(f"negative file size {size}", path=full)
        if _protocol_of(full) == _LOCAL:
            return _LocalSource(full, size)
        return _FsspecSource(self, full, size)

    def exists(self, path: str) -> bool:
        full = self.resolve(path)
        if _protocol_of(full) == _LOCAL:
            return os.path.exists(full)
        with _guard(full, "exists"):
            fs = self._fs(_protocol_of(full))
            fs.invalidate_cache(full)  # s3fs lists are cached; other processes write too
            return bool(fs.exists(full))

    def list(self, prefix: str, recursive: bool = False) -> list[str]:
        """Full paths of the entries directly inside directory `prefix` (files and directories),
        sorted; with recursive=True every file below it. A missing directory gives []."""
        full = self.resolve(prefix)
        if _protocol_of(full) == _LOCAL:
            return _list_local(full, recursive)
        proto = _protocol_of(full)
        fs = self._fs(proto)
        with _guard(full, "list"):
            fs.invalidate_cache(full)
            try:
                names = fs.find(full) if recursive else fs.ls(full, detail=False)
            except FileNotFoundError:
                return []
        out = {_normalize_location(proto, n, n) for n in names}
        out.discard(full)
        return sorted(out)

    # -- writes ----------------------------------------------------------------------------
    def write_atomic(self, path: str, data: bytes) -> None:
        """Replace `path` with `data` so readers see the old or the new content, never a mix.

        Local: temp file in the same directory, fsync, os.replace. Object stores: one PUT (atomic).
        """
        full = self.resolve(path)
        if _protocol_of(full) == _LOCAL:
            with _guard(full, "write"):
                tmp = _write_temp(full, data)
                try:
                    os.replace(tmp, full)
                except BaseException:
                    _unlink_quietly(tmp)
                    raise
                _fsync_dir(os.path.dirname(full))
            return
        with _guard(full, "write"):
            self._fs(_protocol_of(full)).pipe_file(full, bytes(data))

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
        proto = _protocol_of(full)
        if proto == _LOCAL:
            with _guard(full, "write"):
                return _local_create_exclusive(full, data)
        fs = self._fs(proto)
        lock = _MEMORY_LOCK if proto == "memory" else contextlib.nullcontext()
        with lock, _guard(full, "write"):
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
        if full in self._roots and recursive:
            raise PathNotAllowedError(f"refusing to delete the root {full!r}")
        if _protocol_of(full) == _LOCAL:
            with _guard(full, "delete"):
                try:
                    if os.path.isdir(full) and not os.path.islink(full):
                        if not recursive:
                            raise IsADirectoryError(f"{full!r} is a directory; pass recursive=True")
                        shutil.rmtree(full)
                    else:
                        os.remove(full)
                except FileNotFoundError:
                    pass
            return
        fs = self._fs(_protocol_of(full))
        with _guard(full, "delete"):
            try:
                fs.rm(full, recursive=recursive)
            except FileNotFoundError:
                pass


FsspecStorage = Storage


# -- helpers (module-private) --------------------------------------------------------------------

def _split(path: str) -> tuple[str | None, str]:
    """(protocol or None, rest). Rejects 'scheme:' forms without '//'."""
    m = _URL_RE.match(path)
    if m:
        return m.group(1).lower(), path[m.end():]
    m = _SCHEME_ONLY_RE.match(path)
    if m:
        raise PathNotAllowedError(f"path {path!r} looks like a URL without '//'; not allowed")
    return None, path


def _protocol_of(normalized: str) -> str:
    """Protocol of an already normalized location ('file' for local absolute paths)."""
    m = _URL_RE.match(normalized)
    return m.group(1) if m else _LOCAL


def _normalize_location(proto: str | None, rest: str, original: str) -> str:
    """Canonical form: local → absolute normalized path; URL → 'proto://path' with '..' resolved."""
    if proto is None:
        return os.path.normpath(os.path.abspath(rest))
    if proto == _LOCAL:
        # file:///abs or file://localhost/abs only; file://host/… and file:relative are tricks.
        parts = urlsplit(f"file://{rest}")
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/") \
                or parts.query or parts.fragment:
            raise PathNotAllowedError(f"path {original!r} is not a local file:/// URL")
        return os.path.normpath(parts.path)
    if proto not in _REMOTE_PROTOCOLS:
        raise PathNotAllowedError(f"path {original!r} uses protocol {proto!r}, which is not allowed")
    body = rest.lstrip("/")
    # spec-free choice: memory:// keeps fsspec's leading '/' form; buckets come first elsewhere.
    norm = posixpath.normpath("/" + body) if body else "/"
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if proto == "memory":
        return f"memory://{norm}"
    if norm == "/":
        raise PathNotAllowedError(f"path {original!r} names no bucket")
    return f"{proto}://{norm[1:]}"


def _normalize_root(root: str) -> str:
    if not isinstance(root, str) or not root or "\x00" in root:
        raise PathNotAllowedError(f"root {root!r} is not a valid path")
    proto, rest = _split(root)
    loc = _normalize_location(proto, rest, root)
    if _protocol_of(loc) == _LOCAL:
        return os.path.realpath(loc)
    return loc.rstrip("/") if not loc.endswith("://") and loc != "memory:///" else loc


def _is_under(path: str, root: str) -> bool:
    if path == root:
        return True
    base = root if root.endswith("/") else root + "/"
    return path.startswith(base)


@contextlib.contextmanager
def _guard(path: str, op: str) -> Iterator[None]:
    """Let path errors and our own errors through; anything else from the store → unavailable."""
    try:
        yield
    except (*_PATH_ERRORS, BgixError):
        raise
    except PermissionError as exc:
        raise StorageUnavailableError(f"{op} {path!r}: permission denied ({exc})") from exc
    except Exception as exc:  # fsspec backends raise many unrelated types (botocore, aiohttp, OSError)
        raise StorageUnavailableError(f"{op} {path!r} failed: {type(exc).__name__}: {exc}") from exc


def _list_local(full: str, recursive: bool) -> list[str]:
    if not os.path.isdir(full):
        return []
    if not recursive:
        return sorted(os.path.join(full, n) for n in os.listdir(full))
    out = []
    for dirpath, _dirs, files in os.walk(full):
        out.extend(os.path.join(dirpath, f) for f in files)
    return sorted(out)


def _write_temp(full: str, data: bytes) -> str:
    directory = os.path.dirname(full)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _local_create_exclusive(full: str, data: bytes) -> bool:
    tmp = _write_temp(full, data)
    try:
        try:
            os.link(tmp, full)
        except FileExistsError:
            return False
        except OSError:
            # No hard links on this file system: O_EXCL still decides the race atomically, but a
            # reader may see the file before its bytes are complete.
            try:
                fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        _fsync_dir(os.path.dirname(full))
        return True
    finally:
        _unlink_quietly(tmp)


def _fsync_dir(directory: str) -> None:
    # Makes the rename durable; not supported everywhere, and never worth failing a write for.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
