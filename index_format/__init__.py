"""bgix index_format: Paimon bitmap global index files as a library (re-exports only).

Imports no web or Spark code.
"""
from __future__ import annotations

from index_format.errors import (
    BgixError, BindError, ChecksumError, CorruptFileError, FormatError, IndexFormatError,
    InvalidOptionError, ParseError, PathNotAllowedError, PredicateError, QueryTimeoutError,
    StorageUnavailableError, TruncatedFileError, UnknownColumnError, UnsupportedTypeError,
    UnsupportedVersionError,
)
from index_format.global_index.filemeta import FileMeta, parse_meta
from index_format.global_index.footer import Footer
from index_format.global_index.reader import BlockCache, IndexReader, ReadStats, open_index
from index_format.global_index.writer import WrittenFile, manifest_meta, write_index_bytes, write_index_files
from index_format.keys import deserialize_key, serialize_key, sort_key
from index_format.literals import coerce_literal, to_json
from index_format.options import IndexOptions, parse_options
from index_format.storage import RangeSource, Storage
from index_format.types import KeyType, from_arrow, parse_type

__all__ = [
    "BgixError", "BindError", "BlockCache", "ChecksumError", "CorruptFileError", "FileMeta", "Footer",
    "FormatError", "IndexFormatError", "IndexOptions", "IndexReader", "InvalidOptionError", "KeyType",
    "ParseError", "PathNotAllowedError", "PredicateError", "QueryTimeoutError", "RangeSource", "ReadStats",
    "Storage", "StorageUnavailableError", "TruncatedFileError", "UnknownColumnError", "UnsupportedTypeError",
    "UnsupportedVersionError", "WrittenFile", "coerce_literal", "deserialize_key", "from_arrow",
    "manifest_meta", "open_index", "parse_meta", "parse_options", "parse_type", "serialize_key",
    "sort_key", "to_json", "write_index_bytes", "write_index_files",
]
