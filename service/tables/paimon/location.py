"""Where a Paimon filesystem-catalog table lives: `<warehouse>/<db>.db/<table>` split into its parts.

Pure string work (no I/O, no pypaimon): the warehouse is the parent of the `<db>.db` directory and
the identifier is `db.table`, which is how pypaimon's filesystem catalog finds the table again.
"""
from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass

from service.tables.paimon.paimon_errors import NotAPaimonTableError

__all__ = ["PaimonLocation", "parse_location", "scheme_of", "to_storage_path"]

DB_SUFFIX = ".db"  # pypaimon Catalog.DB_SUFFIX: a database is the directory `<name>.db`
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# Java and pypaimon spell local files 'file:/x', 'file:///x' or 'file://localhost/x'.
_FILE_URL = re.compile(r"^file:(?://(?:localhost)?)?(/.*)$")


@dataclass(frozen=True, slots=True)
class PaimonLocation:
    """A table's place: `warehouse` (local absolute path or 'proto://bucket/…'), database and table name."""

    warehouse: str
    database: str
    table: str

    @property
    def identifier(self) -> str:
        """`db.table`, the name pypaimon's catalog loads."""
        return f"{self.database}.{self.table}"

    @property
    def table_path(self) -> str:
        """The table directory, spelled the way pypaimon spells it (warehouse + '/<db>.db/<table>')."""
        return f"{self.warehouse}/{self.database}{DB_SUFFIX}/{self.table}"


def to_storage_path(path: str) -> str:
    """A pypaimon/Java path as index_format.storage accepts it: 'file:' URLs become plain local paths."""
    m = _FILE_URL.match(path)
    return m.group(1) if m else path


def scheme_of(location: str) -> str | None:
    """The URL scheme of `location`, lower-cased ('s3', 'gs', …); None for a local path or 'file:' URL."""
    m = _URL.match(to_storage_path(location.strip()))
    return m.group(1).lower() if m else None


def parse_location(location: str) -> PaimonLocation:
    """Split `<warehouse>/<db>.db/<table>` (local path, file: URL or fsspec URL) into its parts.

    Raises:
        NotAPaimonTableError: empty, no `<db>.db` parent directory, a missing warehouse, or a name
            pypaimon would read as a system table or branch (`$`).
    """
    text = to_storage_path(location.strip()) if isinstance(location, str) else ""
    if not text or "\x00" in text:
        raise NotAPaimonTableError(f"{location!r} is not a table location", location)
    m = _URL.match(text)
    prefix, rest = (text[:m.end()], text[m.end():]) if m else ("", os.path.abspath(text))
    rest = posixpath.normpath(rest).rstrip("/") if rest.strip("/") else ""
    parent, table = posixpath.split(rest)
    warehouse, db_dir = posixpath.split(parent)
    database = db_dir[:-len(DB_SUFFIX)] if db_dir.endswith(DB_SUFFIX) else ""
    if not table or not database or not warehouse.strip("/"):
        raise NotAPaimonTableError(
            f"{location!r} is not a Paimon table directory: expected <warehouse>/<db>.db/<table> "
            f"(the layout of Paimon's filesystem catalog)", location)
    if "$" in table or "$" in database:
        raise NotAPaimonTableError(
            f"{location!r} names a system table or branch ('$'); give the table directory itself", location)
    return PaimonLocation(prefix + warehouse, database, table)
