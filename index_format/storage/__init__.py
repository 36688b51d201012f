"""The storage port: every byte bgix reads or writes goes through this package (re-exports only).

sources: RangeSource and its implementations · paths: location normalising and root checks ·
local: local file system operations · store: the Storage class (the only fsspec user) · range_file: a file object over range reads.
"""
from __future__ import annotations

from index_format.errors import PathNotAllowedError, StorageUnavailableError
from index_format.storage.local import temp_target
from index_format.storage.range_file import RangeFile
from index_format.storage.paths import Roots, is_absolute_location, is_under
from index_format.storage.sources import BytesSource, RangeSource, SizedSource
from index_format.storage.store import FsspecStorage, Storage, as_source, open_file

__all__ = ["BytesSource", "FsspecStorage", "PathNotAllowedError", "RangeFile", "RangeSource", "Roots", "SizedSource",
           "Storage", "StorageUnavailableError", "as_source", "is_absolute_location", "is_under", "open_file",
           "temp_target"]
