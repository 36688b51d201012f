"""What the SQL predicate reader shares: the dialect (standard SQL literals and quoting) and the rules for
number literal text. Used by the token scan (sql_scan), the fast paths (sql_fast) and the converter (sql).
"""
from __future__ import annotations

import decimal

from sqlglot import tokens
from sqlglot.dialects.dialect import Dialect

from index_format.errors import ParseError
from index_format.predicate.limits import MAX_INTEGER_DIGITS, PredicateLimits


class WhereDialect(Dialect):
    """Standard SQL literals: 'text' with '' escape (backslash is literal, so LIKE escapes survive),
    identifiers in "double quotes" or `backticks`."""

    class Tokenizer(tokens.Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ['"', "`"]
        STRING_ESCAPES = ["'"]


def check_number_text(text: str, position: int, limits: PredicateLimits) -> None:
    limits.check_digits(len(text), position)
    if text.isdigit() and len(text.lstrip("0")) > MAX_INTEGER_DIGITS:
        raise ParseError(f"integer literal has {len(text.lstrip('0'))} digits; no column type holds more "
                         f"than {MAX_INTEGER_DIGITS}", position=position)


def number_value(text: str) -> object:
    """The value of a NUMBER token (int for plain digits, else an exact Decimal), None if it is not one."""
    if text.isascii() and text.isdigit():
        return int(text.lstrip("0") or "0")
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        return None


def negated_value(value: object) -> object:
    if isinstance(value, decimal.Decimal):
        return value.copy_negate()  # keeps -0.0 (a distinct double key, spec §3)
    return -value  # type: ignore[operator]
