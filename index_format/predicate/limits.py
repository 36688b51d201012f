"""Size limits every parsed predicate must respect (nesting depth, IN-list length, literal size).

Shared by the SQL and JSON parsers so an over-limit predicate is a PredicateLimitError (a 4xx) before any
recursive code sees it. Imports errors and tree only.
"""
from __future__ import annotations

import sys
import threading
from types import FrameType
from dataclasses import dataclass

from index_format.errors import ParseError, PredicateLimitError
from index_format.predicate.tree import And, Node, Not, Or

DEPTH_LIMIT = "BGIX_MAX_PREDICATE_DEPTH"
IN_LIMIT = "BGIX_MAX_IN_VALUES"
LITERAL_LIMIT = "BGIX_MAX_LITERAL_BYTES"
TOKEN_LIMIT = "BGIX_MAX_PREDICATE_TOKENS"

# DECIMAL(38) and BIGINT UNSIGNED need at most 39 digits; no column type can hold more than 40.
MAX_INTEGER_DIGITS = 40
_MAX_INTEGER_BITS = int(MAX_INTEGER_DIGITS * 3.3219280948873626) + 1  # log2(10) bits per digit


@dataclass(frozen=True, slots=True)
class PredicateLimits:
    """`max_depth`: deepest nesting (SQL parentheses; JSON and/or/not objects; NOT chains count once).
    `max_in_values`: most literals in one IN list. `max_literal_bytes`: largest literal (UTF-8 bytes or digits).
    `max_tokens`: most SQL tokens outside IN lists of literals that the general (sqlglot) parser is given."""

    max_depth: int = 64
    max_in_values: int = 100_000
    max_literal_bytes: int = 65_536
    max_tokens: int = 10_000

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_in_values", "max_literal_bytes", "max_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"PredicateLimits.{name} must be a positive integer, got {value!r}")

    def depth_error(self, position: int | str | None) -> PredicateLimitError:
        return PredicateLimitError(
            f"predicate nests deeper than {self.max_depth} levels ({DEPTH_LIMIT})", limit=DEPTH_LIMIT,
            position=position)

    def token_error(self, position: int | str | None) -> PredicateLimitError:
        return PredicateLimitError(
            f"predicate has more than {self.max_tokens} tokens outside IN lists ({TOKEN_LIMIT}); a longer one "
            "must be AND/OR terms of `column op literal` and `column IN (literals)`", limit=TOKEN_LIMIT,
            position=position)

    def check_in_count(self, count: int, position: int | str | None) -> None:
        if count > self.max_in_values:
            raise PredicateLimitError(
                f"IN list has more than {self.max_in_values} values ({IN_LIMIT})", limit=IN_LIMIT,
                position=position)

    def check_string(self, value: str, position: int | str | None, what: str = "string literal") -> None:
        """Valid Unicode (no lone surrogate) and at most max_literal_bytes of UTF-8."""
        try:
            size = len(value) if value.isascii() else len(value.encode("utf-8"))
        except UnicodeEncodeError as e:
            raise ParseError(f"{what} is not valid Unicode: lone surrogate at character {e.start}",
                             position=position) from None
        if size > self.max_literal_bytes:
            raise PredicateLimitError(
                f"{what} is larger than {self.max_literal_bytes} bytes ({LITERAL_LIMIT})", limit=LITERAL_LIMIT,
                position=position)

    def check_digits(self, digits: int, position: int | str | None) -> None:
        if digits > self.max_literal_bytes:
            raise PredicateLimitError(
                f"number literal is longer than {self.max_literal_bytes} digits ({LITERAL_LIMIT})",
                limit=LITERAL_LIMIT, position=position)

    def check_int(self, value: int, position: int | str | None) -> None:
        """Integers beyond any column type are refused without converting them to text (Python refuses
        int ↔ str conversions over 4300 digits with ValueError)."""
        if value.bit_length() > _MAX_INTEGER_BITS:
            raise ParseError(f"integer literal has more than {MAX_INTEGER_DIGITS} digits; no column type "
                             "can hold it", position=position)

    def check_tree(self, node: Node, position: int | str | None = None) -> None:
        """The built tree (And/Or are balanced, NOT chains folded) stays shallow enough for the recursive
        bind/evaluate/to_json code: at most 8 levels per allowed nesting level, and that much stack."""
        depth = tree_depth(node)
        if depth > 8 * self.max_depth + 64:
            raise self.depth_error(position)
        ensure_recursion_headroom(4 * depth)


DEFAULT_LIMITS = PredicateLimits()


def tree_depth(node: Node) -> int:
    """Height of a predicate tree (a leaf is 1), computed without recursion."""
    best = 0
    stack: list[tuple[Node, int]] = [(node, 1)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        if isinstance(n, (And, Or)):
            stack.append((n.left, d + 1))
            stack.append((n.right, d + 1))
        elif isinstance(n, Not):
            stack.append((n.child, d + 1))
    return best


_recursion_lock = threading.Lock()


def ensure_recursion_headroom(frames: int) -> None:
    """Make sure `frames` more Python frames fit under the recursion limit.

    sqlglot's parser uses ~20 frames per parenthesis level, so 64 levels need more than Python's default
    1000. The limit is interpreter-wide, so it is only ever raised (lowering it could break another
    thread mid-parse); pure-Python frames do not use the C stack on CPython 3.11+.
    """
    needed = _current_depth() + frames + 200
    if sys.getrecursionlimit() >= needed:
        return
    with _recursion_lock:
        if sys.getrecursionlimit() < needed:
            sys.setrecursionlimit(-(-needed // 1024) * 1024)  # whole KiB steps: fewer changes


def _current_depth() -> int:
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth
