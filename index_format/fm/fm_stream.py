"""An fm range built as a build reads it (the FAMILIES `streamer` of fm): rows arrive in batches of local row ids,
in whatever order the build's tasks read them; the rows from local id 0 on that have all arrived go straight into
the file being written (FMFileStream encodes their partitions on the worker threads while later batches are
read), batches past a gap wait for it. `finish` writes the rest: ids no batch brought (rows a deletion vector
removed) as nulls, as write_fm_files after the build worker's densifying would. A file ends every
`records_per_file` ids, as write_fm_files cuts them. Imports index_format.fm.fm_writer, pyarrow and numpy.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa

from index_format.fm.fm_writer import (
    FMFileStream, FMOptions, check_string_keys, fm_options, key_bounds, written_file,
)
from index_format.options import IndexOptions
from index_format.storage import Storage
from index_format.types import KeyType
from index_format.written_files import WriterInputError, WrittenFile, check_row_ids

__all__ = ["FMRangeStream", "open_fm_stream"]


class FMRangeStream:
    """The files of one row range of `rows` local ids (0 .. rows - 1), written as its batches arrive."""

    def __init__(self, rows: int, opts: FMOptions, *, records_per_file: int, new_path: Callable[[], str],
                 storage: Storage) -> None:
        if records_per_file < 1:
            raise WriterInputError("records_per_file must be ≥ 1")
        self.rows, self.opts, self.per_file = rows, opts, records_per_file
        self.new_path, self.storage = new_path, storage
        self.next_id = 0                                        # ids below it are in a file or the open one
        self.held: dict[int, tuple[pa.Array, np.ndarray]] = {}  # batches past a gap, by their first id
        self.written: list[WrittenFile] = []
        self._file: FMFileStream | None = None
        self._bounds: list[tuple[bytes | None, bytes | None]] = []
        self._nulls = False

    def add(self, keys: pa.Array | pa.ChunkedArray, local_ids: np.ndarray) -> None:
        """A batch's rows and their local ids (ascending or not).

        Raises:
            WriterInputError: an id out of the range, or one already given.
        """
        ids = check_row_ids(local_ids, len(keys))
        if len(ids) == 0:
            return
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if int(ids.max()) >= self.rows:
            raise WriterInputError(f"row id {int(ids.max())} is past the range's {self.rows} rows")
        if not bool(np.all(np.diff(ids) > 0)):
            order = np.argsort(ids, kind="stable")
            ids, keys = ids[order], keys.take(pa.array(order))
            if not bool(np.all(np.diff(ids) > 0)):
                raise WriterInputError("an fm range got the same row id twice")
        if int(ids[0]) < self.next_id or int(ids[0]) in self.held:
            raise WriterInputError(f"an fm range got row id {int(ids[0])} twice")
        self.held[int(ids[0])] = (keys, ids)
        self._drain()

    def _drain(self) -> None:
        """Feed every held batch that continues the written rows without a gap inside it."""
        while self.next_id in self.held:
            keys, ids = self.held[self.next_id]
            if int(ids[-1]) - int(ids[0]) != len(ids) - 1:   # a gap inside: deleted rows, or rows still to come
                return
            del self.held[self.next_id]
            self._feed(keys)

    def _feed(self, keys: pa.Array) -> None:
        """Rows next_id .. next_id + len(keys) - 1, cut at file ends."""
        at = 0
        while at < len(keys):
            if self._file is None:
                self._file = FMFileStream(self.next_id, self.opts)
                self._bounds, self._nulls = [], False
            take = min(len(keys) - at, self.per_file - self.next_id % self.per_file)
            piece = keys.slice(at, take)
            self._file.add(piece)
            self._bounds.append(key_bounds(piece))
            self._nulls = self._nulls or piece.null_count > 0
            at += take
            self.next_id += take
            if self.next_id % self.per_file == 0 or self.next_id == self.rows:
                self._close()

    def _close(self) -> None:
        assert self._file is not None
        data, meta = self._file.finish()
        path = self.new_path()
        self.storage.write_atomic(path, data)
        mins = [b[0] for b in self._bounds if b[0] is not None]
        maxs = [b[1] for b in self._bounds if b[1] is not None]
        bounds = (min(mins), max(maxs)) if mins else (None, None)
        self.written.append(written_file(path, data, meta, self._file.rows, bounds, self._nulls))
        self._file = None

    def finish(self) -> list[WrittenFile]:
        """Write what is left (ids no batch brought as nulls); every file of the range, in row order."""
        if self.next_id < self.rows:
            rest = sorted(self.held.items())
            self.held.clear()
            n = self.rows - self.next_id
            where = np.full(n, -1, dtype=np.int64)
            keys: list[pa.Array] = []
            at = 0
            for _, (k, ids) in rest:
                where[ids - self.next_id] = np.arange(at, at + len(ids), dtype=np.int64)
                keys.append(k)
                at += len(k)
            if keys:
                taken = pa.concat_arrays([k.cast(keys[0].type) for k in keys]).take(pa.array(where, mask=where < 0))
            else:
                taken = pa.nulls(n, pa.large_string())
            self._feed(taken)
        return self.written


def open_fm_stream(kt: KeyType | str, options: FMOptions | IndexOptions | Mapping[str, object] | str | None, *,
                   rows: int, records_per_file: int, new_path: Callable[[], str], storage: Storage) -> FMRangeStream:
    """The FAMILIES streamer: a range of `rows` local ids of a STRING column, written as it is read.

    Raises:
        WriterInputError: a key type other than STRING.
    """
    check_string_keys(kt)
    return FMRangeStream(rows, fm_options(options), records_per_file=records_per_file, new_path=new_path,
                         storage=storage)
