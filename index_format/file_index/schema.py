"""A data file's row type as the file-index commands take it: `a:STRING,b:BIGINT,m:MAP<STRING,STRING>`.

The container does not record column types (spec §1), so a reader is told them. A map-key column `m[k]`
(Paimon's FileIndexCommon.toMapKey) has the type of the map's values.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from index_format.errors import InvalidOptionError, UnsupportedTypeError
from index_format.file_index.values import paimon_type
from index_format.types import KeyType

__all__ = ["FieldType", "key_type_of", "parse_field_type", "parse_schema"]

_MAP_KEY = re.compile(r"^(?P<col>.+)\[(?P<key>[^\]]*)\]$")
_MAP = re.compile(r"^\s*MAP\s*<(?P<inner>.*)>\s*$", re.IGNORECASE | re.DOTALL)
_NOT_NULL = re.compile(r"\s+NOT\s+NULL\s*$", re.IGNORECASE)


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside <...> and (...) (MAP<K,V>, DECIMAL(p,s))."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def parse_schema(text: str) -> list[tuple[str, str]]:
    """`a:STRING,b:BIGINT` → [("a", "STRING"), ("b", "BIGINT")]; InvalidOptionError naming the bad part."""
    cols: list[tuple[str, str]] = []
    for part in _split_top(text, ","):
        name, sep, typ = part.partition(":")
        if not sep or not name.strip() or not typ.strip():
            raise InvalidOptionError(f"schema entry {part.strip()!r} is not NAME:TYPE (in {text!r})")
        if any(n == name.strip() for n, _ in cols):
            raise InvalidOptionError(f"schema names column {name.strip()!r} twice")
        cols.append((name.strip(), typ.strip()))
    return cols


@dataclass(frozen=True)
class FieldType:
    """One column's Paimon type, as far as file indexes care."""

    spelling: str
    value: KeyType | None = None     # plain column: its key type
    map_key: str | None = None       # MAP column: the key type's spelling
    map_value: KeyType | None = None
    error: str | None = None         # why it cannot be indexed

    @property
    def is_map(self) -> bool:
        return self.map_key is not None


def parse_field_type(spelling: str) -> FieldType:
    """`INT`, `STRING NOT NULL`, `MAP<STRING,INT>` → FieldType (never raises: `error` says what is wrong)."""
    text = _NOT_NULL.sub("", spelling.strip())
    m = _MAP.match(text)
    if m is None:
        try:
            return FieldType(spelling, value=paimon_type(text))
        except UnsupportedTypeError as exc:
            return FieldType(spelling, error=str(exc))
    inner = _split_top(m.group("inner"))
    if len(inner) != 2:
        return FieldType(spelling, error=f"cannot read map type {spelling!r}")
    key, value = _NOT_NULL.sub("", inner[0].strip()), _NOT_NULL.sub("", inner[1].strip())
    try:
        return FieldType(spelling, map_key=key, map_value=paimon_type(value))
    except UnsupportedTypeError as exc:
        return FieldType(spelling, map_key=key, error=str(exc))


def key_type_of(schema: list[tuple[str, str]], column: str) -> KeyType | None:
    """The KeyType an index on `column` (or map key `m[k]`) holds; None if no index can be on it
    (no such column, a MAP column itself, or a type no file index takes)."""
    types = dict(schema)
    if column in types:
        return parse_field_type(types[column]).value
    m = _MAP_KEY.match(column)
    if m and m.group("col") in types:
        return parse_field_type(types[m.group("col")]).map_value
    return None
