"""Index-type name → how to write and how to read that payload (the one table the container, the CLI and
the evaluator use). Imports each format lazily so that using one does not load the others.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import TYPE_CHECKING

from index_format.errors import InvalidOptionError

if TYPE_CHECKING:  # the command line reads INDEX_TYPES for its parser: that must not load pyarrow
    from index_format.file_index.payload_reader import PayloadReader
    from index_format.types import KeyType

# index type → (module, writer function, reader class). Writers: (kt, values, options) -> bytes, where
# values is a pyarrow array or a sequence of canonical values (None = NULL) in row order. Readers:
# (data, kt, *, path=None) -> PayloadReader.
_FORMATS: dict[str, tuple[str, str, str]] = {
    "bitmap": ("index_format.file_index.bitmap_index", "write_bitmap", "BitmapReader"),
    "bloom-filter": ("index_format.file_index.bloom", "write_bloom_filter", "BloomFilterReader"),
    "bsi": ("index_format.file_index.bsi_index", "write_bsi", "BsiReader"),
    "range-bitmap": ("index_format.file_index.range_bitmap_index", "write_range_bitmap_payload",
                     "RangeBitmapPayloadReader"),
}
INDEX_TYPES = tuple(_FORMATS)

Writer = Callable[["KeyType", object, Mapping[str, str]], bytes]


def _entry(index_type: str) -> tuple[str, str, str]:
    try:
        return _FORMATS[index_type]
    except KeyError:
        raise InvalidOptionError(
            f"unknown file index type {index_type!r}; known: {', '.join(INDEX_TYPES)}") from None


def writer(index_type: str) -> Writer:
    module, fn, _ = _entry(index_type)
    write: Writer = getattr(import_module(module), fn)   # _FORMATS names a writer function
    return write


def open_payload(index_type: str, data: bytes | memoryview, kt: KeyType, *, path: str | None = None) -> PayloadReader:
    module, _, cls = _entry(index_type)
    reader_class: Callable[..., PayloadReader] = getattr(import_module(module), cls)   # _FORMATS names one
    return reader_class(data, kt, path=path)


def write_payload(index_type: str, kt: KeyType, values: object, options: Mapping[str, str] | None = None) -> bytes:
    return writer(index_type)(kt, values, dict(options or {}))
