"""Every error bgix raises derives from BgixError; format problems carry the file, block and reason.

Imports nothing from the rest of the package so any module can raise these.
"""
from __future__ import annotations

from typing import TypedDict


class BgixError(Exception):
    """Root of every error raised by bgix code (library, catalog, build job, service)."""


class IndexFormatError(BgixError):
    """A file that does not follow the bitmap global index format (spec §2).

    Carries the file path, the block that failed (e.g. "footer", "dictionary block 3",
    "bitmap of key 'x'", "block index") and the absolute byte offset when known.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | None = None,
        block: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.reason = reason
        self.path = path
        self.block = block
        self.offset = offset
        where = []
        if path is not None:
            where.append(f"file {path!r}")
        if block is not None:
            where.append(block)
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{', '.join(where)}: {reason}" if where else reason)


class ErrorPlace(TypedDict, total=False):
    """Where in a file an IndexFormatError happened: its keyword arguments, passed as `**where`."""

    path: str | None
    block: str | None
    offset: int | None


# Short alias used by the architecture guide.
FormatError = IndexFormatError


class CorruptFileError(IndexFormatError):
    """Structurally invalid bytes: bad magic, lengths outside the file, absurd varints, bad codec data."""


class TruncatedFileError(CorruptFileError):
    """The file (or a block) is shorter than its recorded length."""


class ChecksumError(CorruptFileError):
    """A block trailer's CRC-32 does not match its body."""


class MissingIndexFileError(IndexFormatError):
    """An index file the table's index lists (a manifest, a snapshot) is not there: deleted, lost or never
    written. `family` says which index it belongs to (bitmap, btree, multivalue; DELETION_VECTORS for a
    Paimon deletion-vector file) when known. Reported like a corrupt file: the file is named, others keep
    answering."""

    def __init__(self, path: str, family: str | None = None) -> None:
        what = f"{family} index file" if family else "index file"
        super().__init__(f"the {what} is missing (the table's index lists it)", path=path)
        self.family = family

    def __reduce__(self) -> tuple[type, tuple[str | None, str | None]]:
        return (type(self), (self.path, self.family))   # crosses process boundaries (build workers)


class UnsupportedVersionError(IndexFormatError):
    """Footer version (or deletion-vector version) this library does not know."""


class PredicateError(BgixError):
    """A predicate that cannot be parsed or bound."""


class ParseError(PredicateError):
    """Unparsable predicate text or JSON; `position` is a character offset or a JSON path."""

    def __init__(self, message: str, *, position: int | str | None = None) -> None:
        self.position = position
        super().__init__(message if position is None else f"{message} (at {position})")


class PredicateLimitError(PredicateError):
    """A predicate over a configured limit (nesting depth, IN-list length, literal size); `limit` names the
    setting, so the caller knows which knob refused it."""

    def __init__(self, message: str, *, limit: str, position: int | str | None = None) -> None:
        self.limit = limit
        self.position = position
        super().__init__(message if position is None else f"{message} (at {position})")


class BindError(PredicateError):
    """A predicate that names an unknown column or a literal that does not fit the column type."""


class UnknownColumnError(BindError):
    """The predicate names a column that has no index (or, `what` = "columns of the table", that the table does not
    have); `known` lists the columns it could name."""

    def __init__(self, column: str, known: list[str], what: str = "indexed columns") -> None:
        self.column = column
        self.known = sorted(known)
        super().__init__(
            f"unknown column {column!r}; {what}: {', '.join(self.known) or '(none)'}"
        )


class InvalidOptionError(BgixError):
    """An index option with an unknown key or a value that does not parse (spec §7.1)."""


class UnsupportedTypeError(BgixError):
    """A column type the bitmap index cannot hold (spec §3)."""


class PathNotAllowedError(BgixError):
    """A path or URL outside the configured warehouse and allowed roots."""


class StorageUnavailableError(BgixError):
    """The file system or object store did not answer."""


class QueryTimeoutError(BgixError):
    """A query ran past its deadline and was abandoned; `budget_s` is its time budget in seconds, if known."""

    def __init__(self, budget_s: float | None = None) -> None:
        self.budget_s = budget_s
        budget = f" of {budget_s:g} s" if budget_s is not None else ""
        super().__init__(f"the query exceeded its time budget{budget} and was abandoned")
