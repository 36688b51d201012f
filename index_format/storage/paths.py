"""Locations: normalising local paths and fsspec URLs, and confining them to a set of roots.

Pure string and path functions (the local root check resolves symlinks); imports only
`index_format.errors` and the standard library.
"""
from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from index_format.errors import PathNotAllowedError

__all__ = ["LOCAL", "Roots", "is_absolute_location", "is_under", "normalize_location", "normalize_root",
           "protocol_of", "split_protocol"]

# Protocols a root may use. http(s)/ftp and friends are never roots: an index must not make the
# service fetch arbitrary URLs.
_REMOTE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "hdfs", "memory"})
LOCAL = "file"
_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# "scheme:" without "//" (file:/etc/passwd, http:x); two letters minimum so "C:" is not a scheme.
_SCHEME_ONLY_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")


def is_absolute_location(location: str) -> bool:
    """True for an absolute local path or a URL ('proto://…'); False for a relative path."""
    return "://" in location or os.path.isabs(location)


def split_protocol(path: str) -> tuple[str | None, str]:
    """(protocol or None, rest). Rejects 'scheme:' forms without '//'."""
    m = _URL_RE.match(path)
    if m:
        return m.group(1).lower(), path[m.end():]
    m = _SCHEME_ONLY_RE.match(path)
    if m:
        raise PathNotAllowedError(f"path {path!r} looks like a URL without '//'; not allowed")
    return None, path


def protocol_of(normalized: str) -> str:
    """Protocol of an already normalized location ('file' for local absolute paths)."""
    m = _URL_RE.match(normalized)
    return m.group(1) if m else LOCAL


def normalize_location(proto: str | None, rest: str, original: str) -> str:
    """Canonical form: local → absolute normalized path; URL → 'proto://path' with '..' resolved."""
    if proto is None:
        return os.path.normpath(os.path.abspath(rest))
    if proto == LOCAL:
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


def normalize_root(root: str) -> str:
    """Canonical form of a root: local roots are real (symlink-free) paths, URLs lose a trailing '/'.

    Raises:
        PathNotAllowedError: empty, NUL-containing, or not an allowed location.
    """
    if not isinstance(root, str) or not root or "\x00" in root:
        raise PathNotAllowedError(f"root {root!r} is not a valid path")
    proto, rest = split_protocol(root)
    loc = normalize_location(proto, rest, root)
    if protocol_of(loc) == LOCAL:
        return os.path.realpath(loc)
    return loc.rstrip("/") if not loc.endswith("://") and loc != "memory:///" else loc


def is_under(path: str, root: str) -> bool:
    """True if normalized `path` is `root` or lies below it."""
    if path == root:
        return True
    base = root if root.endswith("/") else root + "/"
    return path.startswith(base)


class Roots:
    """The main root plus extra allowed roots; resolves paths and refuses any that escape them all."""

    def __init__(self, root: str, allowed_roots: Sequence[str] = ()) -> None:
        self.root: str = normalize_root(root)
        self.allowed: tuple[str, ...] = tuple(normalize_root(r) for r in allowed_roots)
        self.all: tuple[str, ...] = (self.root, *self.allowed)

    def resolve(self, path: str) -> str:
        """Absolute path or URL for `path`; relative paths (and '' for the root) are taken under the root.

        Raises:
            PathNotAllowedError: the path escapes every root, uses another protocol, or is malformed.
        """
        if not isinstance(path, str) or "\x00" in path:
            raise PathNotAllowedError(f"path {path!r} is not a valid path")
        if path in ("", "."):
            return self.root
        proto, rest = split_protocol(path)
        if proto is None and not os.path.isabs(rest):
            return self._resolve_relative(path)
        candidate = normalize_location(proto, rest, path)
        if protocol_of(candidate) == LOCAL:
            return self._check_local(candidate, path)
        for root in self.all:
            if is_under(candidate, root):
                return candidate
        raise PathNotAllowedError(self._outside_message(path))

    def relative(self, path: str) -> str:
        """`path` relative to the main root; raises PathNotAllowedError if it is not under it."""
        full = self.resolve(path)
        if full == self.root:
            return ""
        if not is_under(full, self.root):
            raise PathNotAllowedError(f"path {path!r} is not under the root {self.root!r}")
        base = self.root if self.root.endswith("/") else self.root + "/"
        return full[len(base):]

    def _resolve_relative(self, path: str) -> str:
        if protocol_of(self.root) == LOCAL:
            return self._check_local(os.path.normpath(os.path.join(self.root, path)), path)
        proto, base = split_protocol(self.root)
        assert proto is not None
        candidate = normalize_location(proto, posixpath.join(base, path), path)
        if not is_under(candidate, self.root):
            raise PathNotAllowedError(self._outside_message(path))
        return candidate

    def _check_local(self, candidate: str, original: str) -> str:
        # Roots are stored as real paths; the decision is made on the path with every symlink
        # resolved, so a link inside a root cannot lead outside it (and an alias of a root works).
        local_roots = [r for r in self.all if protocol_of(r) == LOCAL]
        real = os.path.realpath(candidate)
        if any(is_under(real, r) for r in local_roots):
            return real
        if any(is_under(candidate, r) for r in local_roots):
            raise PathNotAllowedError(
                f"path {original!r} resolves through a symlink to {real!r}, outside the allowed roots "
                f"{list(self.all)}")
        raise PathNotAllowedError(self._outside_message(original))

    def _outside_message(self, path: str) -> str:
        return f"path {path!r} is outside the allowed roots {list(self.all)}"
