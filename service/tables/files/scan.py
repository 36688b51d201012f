"""List a table's data files (hive partitions, row counts, size/mtime fingerprints) through Storage.

Imports index_format.storage and pyarrow; never Spark. Row counts come from file metadata
(Parquet footer, ORC footer) or, for csv/json, from reading the file with pyarrow.
Every reader raises DataFileError naming the file when its bytes cannot be read as the table's format
(empty, junk, truncated, not a regular file); store outages (StorageUnavailableError), refused paths and
vanished files (FileNotFoundError) pass through unchanged.
"""
from __future__ import annotations

import contextlib
import io
import os
import stat as stat_mod
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from index_format.errors import IndexFormatError, PathNotAllowedError, StorageUnavailableError
from index_format.storage import RangeFile, Storage
from index_format.storage.paths import LOCAL, protocol_of
from service.catalog.catalog_errors import DataFileError, RowIdError

# File name suffixes per format; files starting with '_' or '.' (_SUCCESS, .crc, temp files) are skipped
# like Spark and Hive do.
SUFFIXES = {
    "parquet": (".parquet", ".parq"),
    "orc": (".orc",),
    "csv": (".csv", ".csv.gz"),
    "json": (".json", ".jsonl", ".ndjson", ".json.gz"),
}


@contextlib.contextmanager
def reading(path: str) -> Iterator[None]:
    """Turn what a reader raises over a broken file into DataFileError(path, reason)."""
    try:
        yield
    except (DataFileError, RowIdError, FileNotFoundError, StorageUnavailableError, PathNotAllowedError):
        raise
    except (IsADirectoryError, NotADirectoryError) as exc:
        raise DataFileError(path, "not a regular file (a directory)") from exc
    except IndexFormatError as exc:  # shorter than its recorded size: it changed after the scan
        raise DataFileError(path, str(exc)) from exc
    except (pa.ArrowException, OSError, ValueError, EOFError, IndexError, KeyError) as exc:
        raise DataFileError(path, f"{type(exc).__name__}: {exc}") from exc


def check_regular(storage: Storage, path: str) -> None:
    """Raise DataFileError unless `path` is a regular file. Local paths only (object stores hold nothing
    else): opening a FIFO for reading would block, a device would never end."""
    full = storage.resolve(path)
    if protocol_of(full) != LOCAL:
        return
    with reading(path):
        mode = os.stat(full).st_mode
    if not stat_mod.S_ISREG(mode):
        kind = ("a directory" if stat_mod.S_ISDIR(mode) else "a FIFO" if stat_mod.S_ISFIFO(mode)
                else "a socket" if stat_mod.S_ISSOCK(mode) else "a device" if stat_mod.S_ISCHR(mode)
                or stat_mod.S_ISBLK(mode) else "special")
        raise DataFileError(path, f"not a regular file ({kind})")


def open_file(storage: Storage, path: str, size: int | None = None) -> io.BufferedReader:
    """A buffered reader over the data file; refuses non-regular files before anything opens them."""
    check_regular(storage, path)
    return io.BufferedReader(RangeFile(storage, path, size), buffer_size=1 << 20)


def file_stat(storage: Storage, path: str) -> tuple[int, float]:
    """(size, mtime seconds) of a data file: the fingerprint that marks an index stale when it changes.

    Raises:
        DataFileError: an object-store directory listed under a data file name.
    """
    with reading(path):
        return storage.stat(path)


def parse_partition(rel_dir: str, partition_columns: list[str]) -> dict[str, str]:
    """Hive-style `a=1/b=x` directory parts → {'a': '1', 'b': 'x'} (URL-unescaped like Hive)."""
    values: dict[str, str] = {}
    for part in rel_dir.split("/"):
        if "=" in part:
            k, v = part.split("=", 1)
            values[unquote(k)] = unquote(v)
    if partition_columns:
        missing = [c for c in partition_columns if c not in values]
        if missing:
            raise RowIdError(f"data file directory {rel_dir!r} lacks partition column(s) {missing}")
        return {c: values[c] for c in partition_columns}
    return values


def hive_keys(rel_dir: str) -> list[str]:
    """Keys of the `k=v` levels of a relative directory, outermost first (URL-unescaped like Hive)."""
    return [unquote(part.split("=", 1)[0]) for part in rel_dir.split("/") if "=" in part]


def relative_dir(location: str, path: str) -> str:
    """Directory of data file `path` relative to the table location ('' at the top)."""
    rel = path[len(location.rstrip("/")) + 1:]
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def list_data_files(storage: Storage, location: str, fmt: str) -> list[str]:
    """Full paths of the table's data files under `location`, sorted by path (the row-id order)."""
    suffixes = SUFFIXES[fmt]
    root = storage.resolve(location)
    out = []
    for p in storage.list(root, recursive=True):
        rel = p[len(root.rstrip("/")) + 1:]
        if any(seg.startswith(("_", ".")) for seg in rel.split("/")):
            continue
        if p.endswith(suffixes):
            out.append(p)
    return sorted(out)


def count_rows(storage: Storage, path: str, fmt: str, size: int) -> int:
    """Rows in one data file, in the order pyarrow reads them (the row-id positions)."""
    with reading(path), open_file(storage, path, size) as fh:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            return int(pq.ParquetFile(fh).metadata.num_rows)
        if fmt == "orc":
            import pyarrow.orc as orc
            return int(orc.ORCFile(fh).nrows)
        if fmt == "csv":
            import pyarrow.csv as pcsv
            return int(pcsv.read_csv(fh).num_rows)
        if fmt == "json":
            import pyarrow.json as pjson
            return int(pjson.read_json(fh).num_rows)
    raise RowIdError(f"unsupported table format {fmt!r}")


def read_columns(storage: Storage, path: str, fmt: str, columns: list[str], size: int | None = None) -> pa.Table:
    """The given columns of one data file, rows in file order (the local engine's reader)."""
    with reading(path), open_file(storage, path, size) as fh:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            return pq.read_table(fh, columns=columns)
        if fmt == "orc":
            import pyarrow.orc as orc
            return orc.ORCFile(fh).read(columns=columns)
        if fmt == "csv":
            import pyarrow.csv as pcsv
            return pcsv.read_csv(fh).select(columns)
        if fmt == "json":
            import pyarrow.json as pjson
            return pjson.read_json(fh).select(columns)
    raise RowIdError(f"unsupported table format {fmt!r}")


def read_schema(storage: Storage, path: str, fmt: str, size: int | None = None) -> pa.Schema:
    """The file's Arrow schema (Parquet/ORC: footer only)."""
    with reading(path), open_file(storage, path, size) as fh:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            return pq.read_schema(fh)
        if fmt == "orc":
            import pyarrow.orc as orc
            return orc.ORCFile(fh).schema
    return _read_all(storage, path, fmt, size).schema


def _read_all(storage: Storage, path: str, fmt: str, size: int | None) -> pa.Table:
    with reading(path), open_file(storage, path, size) as fh:
        if fmt == "csv":
            import pyarrow.csv as pcsv
            return pcsv.read_csv(fh)
        if fmt == "json":
            import pyarrow.json as pjson
            return pjson.read_json(fh)
    raise RowIdError(f"unsupported table format {fmt!r}")


def read_slice(storage: Storage, path: str, fmt: str, columns: list[str], start: int, stop: int,
               size: int | None = None) -> pa.Table:
    """Rows [start, stop) of one file (positions as pyarrow reads them). Parquet reads only the row
    groups that overlap the slice; other formats read the file and slice."""
    if fmt != "parquet":
        return read_columns(storage, path, fmt, columns, size).slice(start, stop - start)
    import pyarrow.parquet as pq
    with reading(path), open_file(storage, path, size) as fh:
        pf = pq.ParquetFile(fh)
        groups, first, offset = [], None, 0
        for i in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(i).num_rows
            if offset < stop and offset + n > start:
                groups.append(i)
                first = offset if first is None else first
            offset += n
        if not groups:
            return pf.schema_arrow.empty_table().select(columns)
        t = pf.read_row_groups(groups, columns=columns)
    return t.slice(start - (first or 0), stop - start)
