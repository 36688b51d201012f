"""The predicate pipeline: parse (sql/json) → bind → rows of a leaf per file (leaf_rows)
→ an answer over a table's files (answer; architecture §2).

Re-exports only. `answer` is imported lazily by callers that answer predicates (it needs the reader and options).
"""
from __future__ import annotations

from index_format.predicate.bind import bind
from index_format.predicate.json import from_json, to_json
from index_format.predicate.operators import OPERATORS, Operator
from index_format.predicate.sql import parse_where
from index_format.predicate.tree import (
    FALSE, TRUE, UNKNOWN, And, BoundLeaf, Leaf, Node, Not, Or,
)
from index_format.predicate.visitors import referenced_columns, rewrite_not, visit

__all__ = [
    "And", "BoundLeaf", "FALSE", "Leaf", "Node", "Not", "OPERATORS", "Operator", "Or", "TRUE", "UNKNOWN",
    "bind", "from_json", "parse_where", "referenced_columns", "rewrite_not", "to_json", "visit",
]
