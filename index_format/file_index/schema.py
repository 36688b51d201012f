"""A data file's row type as the file-index commands take it: `a:STRING,b:BIGINT,m:MAP<STRING,STRING>`.

The container does not record column types (spec §1), so a reader is told them. A map-key column `m[k]`
(Paimon's FileIndexCommon.toMapKey) has the type of the map's values.
"""
from __future__ import annotations

import re

from index_format.errors import InvalidOptionError, UnsupportedTypeError
from index_format.file_index.values import paimon_type
from index_format.types import KeyType

__all__ = ["map_value_type", "parse_schema", "key_type_of"]

_MAP_KEY = re.compile(r"^(?P<col>.+)\[(?P<key>[^\]]*)\]$")


def _split_top(text: str, sep: str) -> list[str]:
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


def map_value_type(type_text: str) -> str | None:
    """`MAP<STRING,INT>` → "INT"; None if not a map type."""
    t = type_text.strip()
    if not t.upper().startswith("MAP<") or not t.endswith(">"):
        return None
    inner = _split_top(t[4:-1], ",")
    if len(inner) != 2:
        raise UnsupportedTypeError(f"cannot read map type {type_text!r}")
    return inner[1].strip()


def key_type_of(schema: list[tuple[str, str]], column: str) -> KeyType | None:
    """The KeyType an index on `column` (or map key `m[k]`) holds; None if no index can be on it."""
    types = dict(schema)
    if column in types:
        # a MAP column itself holds no index: only its keys do, as `m[k]`
        return None if map_value_type(types[column]) is not None else paimon_type(types[column])
    m = _MAP_KEY.match(column)
    if m and m.group("col") in types:
        value = map_value_type(types[m.group("col")])
        if value is not None:
            return paimon_type(value)
    return None
