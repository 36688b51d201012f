"""bgix index_format: Paimon bitmap global index files as a library (re-exports only).

Names are imported on first use (PEP 562), so `import index_format.errors` or a command that only writes
a file does not load the reader, fsspec or asyncio. Imports no web or Spark code.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "index_format.errors": (
        "BgixError", "BindError", "ChecksumError", "CorruptFileError", "FormatError", "IndexFormatError",
        "InvalidOptionError", "ParseError", "PathNotAllowedError", "PredicateError", "QueryTimeoutError",
        "StorageUnavailableError", "TruncatedFileError", "UnknownColumnError", "UnsupportedTypeError",
        "UnsupportedVersionError"),
    "index_format.global_index.filemeta": ("FileMeta", "parse_meta"),
    "index_format.global_index.footer": ("Footer",),
    "index_format.global_index.reader": ("BitmapIndexReader", "BlockCache", "ReadStats", "open_index"),
    "index_format.index_reader": ("IndexReader",),
    "index_format.global_index.writer": ("WrittenFile", "manifest_meta", "write_index_bytes", "write_index_files"),
    "index_format.keys": ("deserialize_key", "serialize_key", "sort_key"),
    "index_format.literals": ("coerce_literal", "to_json"),
    "index_format.options": ("IndexOptions", "parse_options"),
    "index_format.storage": ("RangeSource", "Storage"),
    "index_format.types": ("KeyType", "from_arrow", "parse_type"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'index_format' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
    from index_format.errors import (
        BgixError, BindError, ChecksumError, CorruptFileError, FormatError, IndexFormatError,
        InvalidOptionError, ParseError, PathNotAllowedError, PredicateError, QueryTimeoutError,
        StorageUnavailableError, TruncatedFileError, UnknownColumnError, UnsupportedTypeError,
        UnsupportedVersionError,
    )
    from index_format.global_index.filemeta import FileMeta, parse_meta
    from index_format.global_index.footer import Footer
    from index_format.global_index.reader import BitmapIndexReader, BlockCache, ReadStats, open_index
    from index_format.index_reader import IndexReader
    from index_format.global_index.writer import WrittenFile, manifest_meta, write_index_bytes, write_index_files
    from index_format.keys import deserialize_key, serialize_key, sort_key
    from index_format.literals import coerce_literal, to_json
    from index_format.options import IndexOptions, parse_options
    from index_format.storage import RangeSource, Storage
    from index_format.types import KeyType, from_arrow, parse_type
