"""What the SQL predicate reader shares: the dialect (standard SQL literals and quoting) and the rules for
number literal text. Used by the token scan (sql_scan), the fast paths (sql_fast) and the converter (sql).
"""
from __future__ import annotations

import decimal
import time

from sqlglot import tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenizerCore, TokenType

from index_format.errors import ParseError, PredicateLimitError, QueryTimeoutError
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
    return -value  # type: ignore[operator]  # a number's value: int or Decimal


# Inside an IN list of literals these tokens are not counted against PredicateLimits.max_tokens: the token scan
# turns such a list into one placeholder (sql_scan.TokenScan.fast_in_list), so sqlglot's parser never sees them.
_LIST_TOKENS = frozenset({TokenType.COMMA, TokenType.STRING, TokenType.NUMBER, TokenType.NULL, TokenType.TRUE,
                          TokenType.FALSE, TokenType.DASH})
_CHECK_EVERY = 4096   # tokens between two deadline checks (~15 ms of tokenizing)


class _BudgetedCore(TokenizerCore):
    """sqlglot's tokenizer, stopping once more than `budget` tokens lie outside IN lists of literals or an IN
    list has more values than the limit (raises PredicateLimitError), or `deadline` (time.monotonic()) has passed
    (raises QueryTimeoutError): a text the parser would refuse, or that its request no longer waits for, costs at
    most that much tokenizing."""

    __slots__ = ("budget", "deadline", "limits", "offset", "counted", "in_list")
    budget: int
    deadline: float | None
    limits: PredicateLimits
    offset: int
    counted: int
    in_list: int   # values so far in the IN list being read, 0 outside one

    def _add(self, token_type: TokenType, text: str | None = None) -> None:
        TokenizerCore._add(self, token_type, text)
        toks = self.tokens
        if self.in_list:
            if token_type in _LIST_TOKENS:
                if token_type == TokenType.COMMA:
                    self.in_list += 1   # values so far, once the next one comes
                    self.limits.check_in_count(self.in_list, self.offset + self._start)
                if self.deadline is not None and not len(toks) % _CHECK_EVERY and time.monotonic() > self.deadline:
                    raise QueryTimeoutError()
                return
            self.in_list = 0
        self.counted += 1
        if token_type == TokenType.L_PAREN and len(toks) > 1 and toks[-2].token_type == TokenType.IN:
            self.in_list = 1
        if self.counted > self.budget:
            raise self.limits.token_error(self.offset + self._start)
        if self.deadline is not None and not self.counted % _CHECK_EVERY and time.monotonic() > self.deadline:
            raise QueryTimeoutError()


def tokenize(body: str, limits: PredicateLimits, deadline: float | None = None, offset: int = 0) -> list[Token]:
    """WhereDialect's tokens of `body`, within `limits.max_tokens` (outside IN lists of literals) and `deadline`;
    `offset`: where `body` starts in the text (for the error's position).

    Raises:
        PredicateLimitError: more tokens than the budget (the position of the first one over it).
        QueryTimeoutError: the deadline passed.
        TokenError: what sqlglot's tokenizer raises for text it cannot tokenize.
    """
    plain = WhereDialect().tokenizer()._core
    core = _BudgetedCore.__new__(_BudgetedCore)
    for slot in TokenizerCore.__slots__:   # the dialect's configuration, as sqlglot built it
        if hasattr(plain, slot):
            setattr(core, slot, getattr(plain, slot))
    core.budget, core.deadline, core.limits, core.offset, core.counted, core.in_list = \
        limits.max_tokens, deadline, limits, offset, 0, 0
    try:
        return core.tokenize(body)
    except TokenError as e:
        # sqlglot wraps whatever its scan raised; our own refusals are not tokenizing errors
        if isinstance(e.__cause__, (PredicateLimitError, QueryTimeoutError)):
            cause = e.__cause__
            e.__cause__ = None
            raise cause from None
        raise
