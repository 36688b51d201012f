"""Columns of one local Parquet file for the `bgix file` commands, read by pyarrow's Parquet reader alone.

Why not pyarrow.parquet.ParquetFile: importing pyarrow.parquet loads pyarrow.fs (every remote filesystem
binding, ssl), about 10 ms of a command-line build that only opens a local path. The reader class it wraps,
pyarrow._parquet.ParquetReader, is used directly; should a pyarrow release rename it, ParquetFile is used.
Not pyarrow.parquet.read_table either: it goes through pyarrow.dataset, whose import pulls in pandas.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from index_format.errors import InvalidOptionError

__all__ = ["ParquetInput", "check_key_type", "not_parquet"]


class ParquetInput:
    """One Parquet file opened for reading whole columns; `dictionary`: string or binary columns to read as
    dictionary arrays, the way Parquet usually stores them (no hashing of every row afterwards)."""

    def __init__(self, path: str, dictionary: Sequence[str] = ()) -> None:
        self.path = path
        self._reader: Any = None
        self._file: Any = None
        try:
            from pyarrow._parquet import ParquetReader
            # asked of the class: an unopened reader's properties are not safe to touch
            if not all(hasattr(ParquetReader, m) for m in ("open", "read_all", "column_paths", "schema_arrow")):
                raise AttributeError("ParquetReader")
            reader = ParquetReader()
        except (ImportError, AttributeError):
            import pyarrow.parquet as pq
            try:
                self._file = pq.ParquetFile(path, read_dictionary=list(dictionary) or None)
            except pa.ArrowInvalid as exc:
                raise not_parquet(path, exc) from None
            self.schema: pa.Schema = self._file.schema_arrow
            return
        # the local file ParquetFile would open (same errors: FileNotFoundError for a missing path)
        self._source = pa.OSFile(path)
        try:
            reader.open(self._source, read_dictionary=list(dictionary) or None)
        except pa.ArrowInvalid as exc:   # not Parquet: its footer magic or metadata is missing
            self._source.close()
            raise not_parquet(path, exc) from None
        except BaseException:
            self._source.close()
            raise
        self._reader = reader
        self.schema = reader.schema_arrow

    def read(self, columns: Sequence[str]) -> pa.Table:
        """The named columns (each must exist: see check_columns), all row groups."""
        if self._reader is None:
            return self._file.read(columns=list(columns))
        # a column is every Parquet leaf under its name (one for a flat column, more for a map or struct)
        wanted = {c: i for i, c in enumerate(columns)}
        leaves = sorted((wanted[path[0]], i) for i, path in enumerate(self._reader.column_paths) if path[0] in wanted)
        return self._reader.read_all(column_indices=[i for _, i in leaves], use_threads=True)

    def read_in_background(self, columns: Sequence[str]) -> Callable[[], pa.Table]:
        """Start read(columns) on a thread of its own (pyarrow reads without holding the GIL, so the caller
        can import or compute meanwhile); the returned function waits for the table, or raises what the
        read raised. Close the input only after calling it."""
        out: list[Any] = []

        def work() -> None:
            try:
                out.append((True, self.read(columns)))
            except BaseException as exc:  # handed to the waiting caller
                out.append((False, exc))

        thread = threading.Thread(target=work, name="bgix-parquet-read", daemon=True)
        thread.start()

        def wait() -> pa.Table:
            thread.join()
            ok, value = out[0]
            if not ok:
                raise value
            return value

        return wait

    def check_columns(self, columns: Sequence[str]) -> None:
        """InvalidOptionError naming the first column the file does not have, and the columns it has."""
        names = self.schema.names
        for c in columns:
            if c not in names:
                raise InvalidOptionError(f"no column {c!r} in {self.path}; columns: {', '.join(names)}")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        elif self._reader is not None:
            self._reader.close()
            self._source.close()

    def __enter__(self) -> ParquetInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def not_parquet(path: str, exc: Exception) -> InvalidOptionError:
    """The error for an input that pyarrow cannot open as Parquet (a CSV, an index file, a truncated copy)."""
    return InvalidOptionError(f"{path} is not a Parquet file ({exc}); the input must be a Parquet file")


# Key types whose values have the same form: a --type from another group (INT for a string column) is a
# mistake, and would fail deep in the writer with a message about key bytes
_GROUPS = {"string": "text", "boolean": "boolean", "tinyint": "integer", "smallint": "integer", "int": "integer",
           "bigint": "integer", "float": "floating point", "double": "floating point", "decimal": "decimal",
           "date": "date", "time": "time", "timestamp": "timestamp", "timestamp_ltz": "timestamp"}


def check_key_type(path: str, column: str, arrow_type: pa.DataType, given: Any) -> None:
    """InvalidOptionError when --type `given` (a KeyType) cannot describe the Parquet column's values."""
    from index_format.errors import UnsupportedTypeError
    from index_format.types import from_arrow

    value_type = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if given.name == "string" and (pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type)):
        return
    try:
        group = _GROUPS[from_arrow(value_type).name]
    except UnsupportedTypeError:
        group = None
    if group != _GROUPS[given.name]:
        raise InvalidOptionError(
            f"--type {given.spelling.upper()} does not match column {column!r} of {path}, whose Parquet type is "
            f"{value_type}; leave --type out to use the column's own type")
