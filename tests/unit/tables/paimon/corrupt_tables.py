"""Break one file of a Paimon table that pypaimon wrote: which file plays which part comes from pypaimon itself (its
snapshot manager, manifest list reader and index manifest), the damage is seeded."""
from __future__ import annotations

import random
from pathlib import Path

import pyarrow.parquet as pq
from pypaimon.index.index_file_handler import IndexFileHandler
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from tests.unit.tables.paimon.paimon_tables import pypaimon_table

__all__ = ["METADATA_PARTS", "break_dictionary_indices", "corrupt", "data_files", "deletion_vector_file",
           "metadata_file"]

# The metadata a read of the latest snapshot goes through, in pypaimon's words.
METADATA_PARTS = ("schema", "snapshot", "base_manifest_list", "delta_manifest_list", "manifest", "index_manifest")


def metadata_file(location: Path, part: str) -> Path:
    """The file that plays `part` (one of METADATA_PARTS, or 'latest_hint') for the table's latest snapshot."""
    table = pypaimon_table(location)
    snap = table.snapshot_manager().get_latest_snapshot()
    if part == "schema":
        return location / "schema" / f"schema-{snap.schema_id}"
    if part == "snapshot":
        return location / "snapshot" / f"snapshot-{snap.id}"
    if part == "latest_hint":
        return location / "snapshot" / "LATEST"
    if part == "base_manifest_list":
        return location / "manifest" / snap.base_manifest_list
    if part == "delta_manifest_list":
        return location / "manifest" / snap.delta_manifest_list
    if part == "manifest":
        metas = ManifestListManager(table).read_all(snap)
        return location / "manifest" / sorted(m.file_name for m in metas)[0]
    if part == "index_manifest":
        assert snap.index_manifest, "the table has no index manifest"
        return location / "manifest" / snap.index_manifest
    raise ValueError(part)


def deletion_vector_file(location: Path) -> Path:
    """The latest snapshot's (first) deletion-vector index file."""
    entries = [e for e in IndexFileHandler(table=pypaimon_table(location)).scan(None)
               if e.kind == 0 and e.index_file.index_type == "DELETION_VECTORS"]
    assert entries, "the table has no deletion vectors"
    return location / "index" / sorted(e.index_file.file_name for e in entries)[0]


def data_files(location: Path) -> list[Path]:
    """The latest snapshot's data files, as pypaimon plans them, sorted by path."""
    table = pypaimon_table(location)
    splits = table.new_read_builder().new_scan().plan().splits()
    return sorted({Path(str(f.file_path).removeprefix("file:")) for s in splits for f in s.files})


def corrupt(path: Path, how: str, seed: int = 0) -> None:
    """Overwrite `path`: 'junk' (a line of text), 'random' (as many seeded random bytes as it had), 'middle' (a
    seeded random run over its second quarter, the rest kept: headers survive), 'truncate' (its first half)."""
    data = path.read_bytes()
    rng = random.Random(seed)
    if how == "junk":
        out = b"this is not a Paimon file\n"
    elif how == "random":
        out = rng.randbytes(max(len(data), 64))
    elif how == "middle":
        q = max(len(data) // 4, 1)
        out = data[:q] + rng.randbytes(q) + data[2 * q:]
    elif how == "truncate":
        out = data[: len(data) // 2]
    else:
        raise ValueError(how)
    path.write_bytes(out)


def break_dictionary_indices(path: Path, column: str) -> None:
    """Set the last bytes of `column`'s (uncompressed, dictionary-encoded) column chunk to 0xFF: bit-packed
    dictionary indices past the dictionary's end, which a Parquet reader only notices when it decodes them."""
    md = pq.ParquetFile(path).metadata.row_group(0)
    chunk = next(md.column(i) for i in range(md.num_columns) if md.column(i).path_in_schema == column)
    assert chunk.compression == "UNCOMPRESSED" and chunk.dictionary_page_offset is not None
    end = chunk.dictionary_page_offset + chunk.total_compressed_size
    data = bytearray(path.read_bytes())
    data[end - 4:end] = b"\xff" * 4
    path.write_bytes(bytes(data))
