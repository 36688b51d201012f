"""One `bgix file query` request as text: a SQL predicate, optionally followed by a top-N clause
`ORDER BY col [ASC|DESC] [NULLS FIRST|LAST] [, more keys] LIMIT k` (either part may be alone).

Top-N is what Paimon's range-bitmap answers with visitTopN; one sort key is "strict" (exactly k rows),
more keys keep ties. Default null order is SQL's: NULLS FIRST ascending, NULLS LAST descending.
"""
from __future__ import annotations

import re

from index_format.errors import ParseError
from index_format.file_index.file_predicate import TopN
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import TRUE, Node

__all__ = ["parse_query"]

_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)
_KEY = re.compile(r"^\s*(?P<col>\"(?:[^\"]|\"\")+\"|[A-Za-z_][\w\[\]]*)\s*(?P<dir>asc|desc)?"
                  r"\s*(?:nulls\s+(?P<nulls>first|last))?\s*$", re.IGNORECASE)
_LIMIT = re.compile(r"^(?P<keys>.*?)\blimit\s+(?P<k>\d+)\s*;?\s*$", re.IGNORECASE | re.DOTALL)


def _outside_quotes(text: str) -> list[int]:
    """Start offsets of ORDER BY that are not inside a quoted literal or identifier."""
    hits = []
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                if i + 1 < len(text) and text[i + 1] == quote:  # '' / "" escape
                    i += 1
                else:
                    quote = None
        elif ch in "'\"":
            quote = ch
        else:
            m = _ORDER_BY.match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                hits.append(i)
        i += 1
    return hits


def parse_query(text: str) -> tuple[Node, TopN | None]:
    """The predicate (TRUE when there is none) and the top-N request, if any."""
    hits = _outside_quotes(text)
    if not hits:
        return parse_where(text), None
    at = hits[-1]
    head, tail = text[:at], text[at:]
    m = _LIMIT.match(tail[_ORDER_BY.match(tail).end():])  # type: ignore[union-attr]  # found by _outside_quotes
    if not m:
        raise ParseError("ORDER BY needs a LIMIT k at the end", position=at)
    keys = [k for k in m.group("keys").split(",")]
    first = _KEY.match(keys[0])
    if not first or any(not _KEY.match(k) for k in keys[1:]):
        raise ParseError("ORDER BY expects `column [ASC|DESC] [NULLS FIRST|LAST]` keys", position=at)
    col = first.group("col")
    if col.startswith('"'):
        col = col[1:-1].replace('""', '"')
    descending = (first.group("dir") or "asc").lower() == "desc"
    nulls = first.group("nulls")
    nulls_first = (nulls.lower() == "first") if nulls else not descending
    top = TopN(column=col, k=int(m.group("k")), descending=descending, nulls_first=nulls_first,
               strict=len(keys) == 1)
    predicate = parse_where(head) if head.strip() and head.strip().lower() != "where" else TRUE
    return predicate, top
