"""A local file IO for committing into Paimon tables whose rename never replaces a file, atomically.

Paimon commits a snapshot by renaming a temp file to `snapshot/snapshot-N`, which must fail when N exists.
pypaimon's local rename checks that the target is absent and then renames (under a lock of its own process
only), and POSIX rename(2) replaces: a writer in another process (pypaimon-rust, Spark, a second bgix) that
renames its snapshot-N in between is silently overwritten — its commit lost although it reported success.
A hard link fails with EEXIST when the name exists, decided by the kernel in one step, so the second writer
is told its attempt failed and commits again at N+1, as Paimon's protocol intends.
"""
from __future__ import annotations

import errno
import os
from typing import cast

from pypaimon.filesystem.local_file_io import LocalFileIO

__all__ = ["NoReplaceLocalFileIO"]

# Filesystems without hard links (some FUSE and SMB mounts) answer these; pypaimon's rename is used there.
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.ENOSYS}


class NoReplaceLocalFileIO(LocalFileIO):  # type: ignore[misc]  # pypaimon is untyped (Any)
    """pypaimon's LocalFileIO with the rename its contract describes: False, and nothing changed, when `dst` exists."""

    def rename(self, src: str, dst: str) -> bool:
        source, target = self._to_file(src), self._to_file(dst)
        if target.is_dir():   # "move into the directory": pypaimon's own (Hadoop-compatible) behaviour
            return cast(bool, super().rename(src, dst))
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except (FileExistsError, FileNotFoundError):   # taken by another writer; or no source (as pypaimon's)
            return False
        except OSError as exc:
            if exc.errno in _NO_LINKS:
                return cast(bool, super().rename(src, dst))
            return False
        os.unlink(source)
        return True

