"""Every byte pypaimon reads or writes for bgix, confined to the storage roots: a FileIO wrapper and checks.

pypaimon reaches a table's files through its FileIO (metadata, commits) and that FileIO's pyarrow file system
(data files). A table can point outside the roots bgix may touch: a data file or a metadata directory replaced by
a symlink, or `data-file.external-paths` / `global-index.external-path` naming another place. ConfinedFileIO
wraps the FileIO a table is loaded with (and, for local tables, commits through no_replace_io's rename): every
read, write, rename, list, exists and delete, and every open of its pyarrow file system, first resolves the path
(symlinks included, index_format.storage.paths.Roots) and raises PathNotAllowedError naming it when it lies
outside. The check precedes the operation; a link swapped between the check and the open is not caught (this
confines tables that point outside, it is not a sandbox against a writer racing bgix on the same directory).

pypaimon wraps what its FileIO raises (RuntimeError "Failed to load schema …" from the refusal): naming_refusals
and refusal_in find the refusal again, so a caller sees PathNotAllowedError (403), not pypaimon's wrapper.
pypaimon's native (pypaimon-rust) planning, reading and committing open files without a FileIO, so tables are
opened with those routes switched off (PYTHON_ONLY).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow.fs as pafs
from pypaimon import CatalogFactory
from pypaimon.common.file_io import FileIO
from pypaimon.filesystem.local_file_io import LocalFileIO

from index_format.errors import PathNotAllowedError
from index_format.storage.paths import Roots
from service.tables.paimon.location import PaimonLocation, scheme_of, to_storage_path
from service.tables.paimon.no_replace_io import NoReplaceLocalFileIO

__all__ = ["PYTHON_ONLY", "ConfinedFileIO", "check_data_files", "check_declared_paths", "check_table_dir",
           "declared_paths", "load_confined_table", "naming_refusals", "refusal_in", "roots_of"]

# Table options that make pypaimon plan, read, write or commit through pypaimon-rust, which opens files itself.
PYTHON_ONLY = {"scan.native-plan.enabled": "false", "read.native.enabled": "false",
               "commit.native.enabled": "false", "write.native.enabled": "false"}
_DECLARED_PATHS = ("data-file.external-paths", "global-index.external-path")


def roots_of(roots: Sequence[str]) -> Roots:
    """A Roots of `roots` (the first is the main one; every path is judged against all of them)."""
    if not roots:
        raise PathNotAllowedError("no storage roots to confine the Paimon table to")
    return Roots(roots[0], roots[1:])


def refusal_in(exc: BaseException) -> PathNotAllowedError | None:
    """The first PathNotAllowedError in `exc`'s cause chain (pypaimon re-raises what its FileIO raised, wrapped)."""
    seen: BaseException | None = exc
    for _ in range(8):  # a short cause chain; never loop on a cycle
        if seen is None or isinstance(seen, PathNotAllowedError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


@contextmanager
def naming_refusals() -> Iterator[None]:
    """Around a pypaimon call: a failure caused by a refused path is raised as that PathNotAllowedError."""
    try:
        yield
    except PathNotAllowedError:
        raise
    except Exception as exc:
        refused = refusal_in(exc)
        if refused is None:
            raise
        raise refused from exc


def check_table_dir(table_path: str, roots: Roots) -> None:
    """The table directory and each of its entries that is a symlink (schema/, snapshot/, manifest/, index/, a
    partition directory …) resolve under `roots`; one stat per entry, so cheap enough for every open.

    Raises:
        PathNotAllowedError: naming the directory or entry and where it leads.
    """
    real = _checked(roots, to_storage_path(table_path), "directory")
    if scheme_of(table_path) is not None:
        return   # object stores have no symlinks: the prefix check is all there is
    try:
        entries = list(os.scandir(real))
    except OSError:
        return   # missing or unreadable: opening the table says so
    for entry in entries:
        if entry.is_symlink():
            _checked(roots, os.path.join(to_storage_path(table_path), entry.name), "entry")


def _declared(options: Mapping[str, object]) -> list[tuple[str, str]]:
    """(option, path) of every external path a table's options declare."""
    return [(key, p.strip()) for key in _DECLARED_PATHS for p in str(options.get(key) or "").split(",") if p.strip()]


def declared_paths(options: Mapping[str, object]) -> list[str]:
    """The external data and global index paths a table's options declare (`data-file.external-paths`,
    `global-index.external-path`), as storage paths, unchecked."""
    return [to_storage_path(raw) for _, raw in _declared(options)]


def check_declared_paths(options: Mapping[str, object], roots: Roots, table_path: str) -> None:
    """Each external path the table's options declare lies under `roots`.

    Raises:
        PathNotAllowedError: naming the option and the path.
    """
    for key, raw in _declared(options):
        try:
            roots.resolve(to_storage_path(raw))
        except PathNotAllowedError as exc:
            raise PathNotAllowedError(f"Paimon table {table_path!r}: option {key!r} names {raw!r}: {exc}") from exc


def check_data_files(paths: Iterable[str], roots: Roots) -> None:
    """Each of a snapshot's data files (its file or external path) resolves under `roots`: one realpath each, so
    a table with a data file linked outside is refused when it is registered, not only when a build reads it.

    Raises:
        PathNotAllowedError: naming the first file that does not.
    """
    for path in paths:
        _checked(roots, to_storage_path(path), "data file")


def _checked(roots: Roots, path: str, what: str) -> str:
    try:
        return roots.resolve(path)
    except PathNotAllowedError as exc:
        raise PathNotAllowedError(f"Paimon table {what} {path!r}: {exc}") from exc


def load_confined_table(location: PaimonLocation, catalog_options: Mapping[str, str], roots: Roots) -> Any:
    """pypaimon's FileStoreTable of `location`, loaded (schema read included) through a ConfinedFileIO on `roots`,
    with the native routes off. Raises what pypaimon's catalog raises, PathNotAllowedError for a refused path."""
    catalog = CatalogFactory.create({**dict(catalog_options), "warehouse": location.warehouse})
    catalog.file_io = ConfinedFileIO(catalog.file_io, roots, location.table_path)
    with naming_refusals():
        table = catalog.get_table(location.identifier)
    if any(k in table.table_schema.options for k in PYTHON_ONLY):
        table = table.copy_without_time_travel(dict(PYTHON_ONLY))
    return table


class ConfinedFileIO(FileIO):  # type: ignore[misc]  # pypaimon is untyped (Any)
    """A pypaimon FileIO whose every path is checked against `roots` first (the module says how).

    Wraps any FileIO (a local one with its rename replaced by no_replace_io's). The I/O methods pypaimon's FileIOs
    implement are checked here, then passed on; FileIO's other methods (read_file_utf8, write_file, copy_files,
    delete_quietly, ranged reads …) are inherited and call these. Attributes without I/O (properties, …) come
    from the wrapped FileIO.
    """

    def __init__(self, delegate: FileIO, roots: Roots, table: str) -> None:
        if type(delegate) is LocalFileIO:
            delegate = NoReplaceLocalFileIO(delegate.path, delegate.properties)
        self._delegate = delegate
        self.roots = roots
        self.table = table
        self._scheme = scheme_of(table)
        self._filesystem: pafs.FileSystem | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the pyarrow wrapper is made again where it is used (a PyFileSystem over a Python handler)
        return {**self.__dict__, "_filesystem": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_delegate", "_filesystem"):
            raise AttributeError(name)
        return getattr(self._delegate, name)

    @property
    def delegate(self) -> FileIO:
        """The wrapped FileIO."""
        return self._delegate

    def check(self, path: str) -> str:
        """`path` resolved (symlinks followed); PathNotAllowedError naming it when it lies outside the roots."""
        try:
            return self.roots.resolve(to_storage_path(str(path)))
        except PathNotAllowedError as exc:
            raise PathNotAllowedError(f"Paimon table {self.table!r}: {exc}") from exc

    # -- pyarrow's file system (data files) --------------------------------------------------------------------
    @property
    def filesystem(self) -> pafs.FileSystem:
        if self._filesystem is None:
            self._filesystem = pafs.PyFileSystem(_ConfinedHandler(self._delegate.filesystem, self._fs_check))
        return self._filesystem

    def _fs_check(self, fs_path: str) -> None:
        """A pyarrow path ('bucket/key' on object stores) checked as the location it names."""
        self.check(fs_path if self._scheme is None else f"{self._scheme}://{fs_path.lstrip('/')}")

    # -- no I/O: the wrapped FileIO's -------------------------------------------------------------------------
    def to_filesystem_path(self, path: str) -> str:
        return str(self._delegate.to_filesystem_path(path))

    def parse_location(self, location: str) -> Any:
        return self._delegate.parse_location(location)

    def close(self) -> None:
        self._delegate.close()

    # -- checked, then the wrapped FileIO's ---------------------------------------------------------------------
    def new_input_stream(self, path: str) -> Any:
        self.check(path)
        return self._delegate.new_input_stream(path)

    def new_output_stream(self, path: str) -> Any:
        self.check(path)
        return self._delegate.new_output_stream(path)

    def get_file_status(self, path: str) -> Any:
        self.check(path)
        return self._delegate.get_file_status(path)

    def list_status(self, path: str) -> Any:
        self.check(path)
        return self._delegate.list_status(path)

    def list_directories(self, path: str) -> Any:
        self.check(path)
        return self._delegate.list_directories(path)

    def exists(self, path: str) -> bool:
        self.check(path)
        return bool(self._delegate.exists(path))

    def delete(self, path: str, recursive: bool = False) -> bool:
        self.check(path)
        return bool(self._delegate.delete(path, recursive))

    def mkdirs(self, path: str) -> bool:
        self.check(path)
        return bool(self._delegate.mkdirs(path))

    def rename(self, src: str, dst: str) -> bool:
        self.check(src)
        self.check(dst)
        return bool(self._delegate.rename(src, dst))

    def try_to_write_atomic(self, path: str, content: str) -> bool:
        self.check(path)   # its temp file goes next to it, in the same (checked) directory
        return bool(self._delegate.try_to_write_atomic(path, content))

    def copy_file(self, source_path: str, target_path: str, overwrite: bool = False) -> None:
        self.check(source_path)
        self.check(target_path)
        self._delegate.copy_file(source_path, target_path, overwrite)

    def _write(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        self.check(path)
        return getattr(self._delegate, method)(path, *args, **kwargs)

    def write_parquet(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._write("write_parquet", path, *args, **kwargs)

    def write_orc(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._write("write_orc", path, *args, **kwargs)

    def write_avro(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._write("write_avro", path, *args, **kwargs)

    def write_lance(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._write("write_lance", path, *args, **kwargs)

    def write_mosaic(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._write("write_mosaic", path, *args, **kwargs)

    def write_vortex(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._write("write_vortex", path, *args, **kwargs)

    def write_row(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._write("write_row", path, *args, **kwargs)

    def write_blob(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self._write("write_blob", path, *args, **kwargs)


class _ConfinedHandler(pafs.FileSystemHandler):  # type: ignore[misc]  # pyarrow is untyped (Any)
    """pyarrow's file system of a FileIO with every path checked first (pypaimon's readers open data files here)."""

    def __init__(self, fs: pafs.FileSystem, check: Any) -> None:
        self.fs = fs
        self._check = check

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ConfinedHandler) and other.fs.equals(self.fs) and other._check == self._check

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return id(self)

    def get_type_name(self) -> str:
        return f"bgix-confined-{self.fs.type_name}"

    def normalize_path(self, path: str) -> str:
        return str(self.fs.normalize_path(path))

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        for p in paths:
            self._check(p)
        return list(self.fs.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        self._check(selector.base_dir)
        return list(self.fs.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self._check(path)
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self._check(path)
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._check(path)
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise PathNotAllowedError("deleting the root directory's contents is never allowed")

    def delete_file(self, path: str) -> None:
        self._check(path)
        self.fs.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self._check(src)
        self._check(dest)
        self.fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self._check(src)
        self._check(dest)
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        self._check(path)
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        self._check(path)
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        self._check(path)
        return self.fs.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        self._check(path)
        return self.fs.open_append_stream(path, metadata=metadata)
