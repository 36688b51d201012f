"""Local file system operations behind Storage: listing, atomic replace, exclusive create, delete.

Paths are already resolved and root-checked by the caller; imports only the standard library.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil

__all__ = ["create_exclusive", "delete", "list_dir", "replace_atomic", "temp_target"]

# A temp file is `.tmp-<16 random hex>-<the name it becomes>.part`: who is writing it can be told from its name
# (orphan cleanup keeps a running build's temp files by the job stamp in its target's name). A target name
# longer than _TEMP_NAME_MAX bytes is left out (a file name has at most 255 bytes on most file systems).
_TEMP_NAME_MAX = 160
_TEMP = re.compile(r"^\.tmp-[0-9a-f]{16}(?:-(.+))?\.part$", re.S)


def list_dir(full: str, recursive: bool) -> list[str]:
    """Entries directly inside `full` (or every file below it), sorted; [] if it is no directory."""
    if not os.path.isdir(full):
        return []
    if not recursive:
        return sorted(os.path.join(full, n) for n in os.listdir(full))
    out: list[str] = []
    for dirpath, _dirs, files in os.walk(full):
        out.extend(os.path.join(dirpath, f) for f in files)
    return sorted(out)


def replace_atomic(full: str, data: bytes) -> None:
    """Temp file in the same directory, fsync, os.replace: readers see old or new, never a mix."""
    tmp = _write_temp(full, data)
    try:
        os.replace(tmp, full)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(os.path.dirname(full))


def create_exclusive(full: str, data: bytes) -> bool:
    """Create `full` with `data` unless it exists; True if we created it.

    The complete temp file is hard-linked into place (os.link fails atomically if the name exists).
    """
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
                fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
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


def temp_target(name: str) -> str | None:
    """The name of the file that the temp file `name` (a base name) becomes; None when `name` is no temp file
    of these writes, or one that does not say (an older temp name, or a long target's)."""
    m = _TEMP.match(name)
    return None if m is None else m.group(1)


def delete(full: str, recursive: bool) -> None:
    """Remove a file, or a directory tree with recursive=True; a missing path is ignored.

    Raises:
        IsADirectoryError: `full` is a directory and recursive is False.
    """
    try:
        if os.path.isdir(full) and not os.path.islink(full):
            if not recursive:
                raise IsADirectoryError(f"{full!r} is a directory; pass recursive=True")
            shutil.rmtree(full)
        else:
            os.remove(full)
    except FileNotFoundError:
        pass


def _write_temp(full: str, data: bytes) -> str:
    directory = os.path.dirname(full)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = _open_temp(directory, os.path.basename(full))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _open_temp(directory: str, target: str) -> tuple[int, str]:
    """A new, exclusively created temp file in `directory` for the file named `target` there, mode 0666 less
    the umask like any file a program writes (tempfile.mkstemp's 0600 would leave index files unreadable to
    other users and to a Spark cluster or Paimon reader running as another user; secrets are written
    elsewhere, privately)."""
    says = f"-{target}" if target and len(os.fsencode(target)) <= _TEMP_NAME_MAX else ""
    for _ in range(100):
        tmp = os.path.join(directory, f".tmp-{secrets.token_hex(8)}{says}.part")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp file name in {directory}")


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
