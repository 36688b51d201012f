"""The pass over sqlglot's tokens before its recursive parser runs (the tokenizer is iterative): limits
(nesting, IN-list length, literal size), misleading-token diagnoses, NOT-chain folding and the IN-list fast
path; and, for big texts, a regex pre-pass that refuses over-limit input before tokenizing at all.
"""
from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable

from sqlglot.tokenizer_core import Token, TokenType

from index_format.errors import ParseError, QueryTimeoutError
from index_format.predicate.limits import PredicateLimits
from index_format.predicate.sql_tokens import check_number_text, negated_value, number_value


# sqlglot's tokenizer holds ~250 bytes per token and does ~4 µs of work per token: a 6 MB list of 3M values
# took 25 s and 1.6 GB before the token scan could refuse it. Texts over this size get a regex pass first.
PRESCAN_MIN = 64 * 1024
_PRESCAN = re.compile(
    r"'[^']*(?:''[^']*)*'?"          # string literal ('' escapes a quote)
    r'|"[^"]*(?:""[^"]*)*"?'         # quoted name
    r"|`[^`]*`?"
    r"|--[^\n]*"
    r"|/\*.*?(?:\*/|\Z)"
    r"|\b(IN)\s*\("
    r"|[(),]",
    re.IGNORECASE | re.DOTALL)


def prescan(body: str, offset: int, limits: PredicateLimits, count_tokens: bool = True) -> None:
    """Refuse IN lists over the limit, parenthesis nesting over the limit and more tokens than
    limits.max_tokens outside IN lists without tokenizing (the tokenizer and the token scan check the same
    limits exactly; this pass only runs on big texts, to stop early: what it counts outside IN lists, strings,
    names, parentheses and commas, is a token each, so it never counts more than the tokenizer)."""
    stack: list[int] = []  # per open parenthesis: values so far when it opened an IN list, else -1
    outside = 0            # matches outside IN lists (comments are no tokens)
    for m in _PRESCAN.finditer(body):
        ch = body[m.start()]
        if count_tokens and (not stack or stack[-1] < 0) and not body.startswith(("--", "/*"), m.start()):
            outside += 1
            if outside > limits.max_tokens:
                raise limits.token_error(offset + m.start())
        if m.group(1) is not None or ch == "(":
            stack.append(1 if m.group(1) is not None else -1)
            if len(stack) > limits.max_depth:
                raise limits.depth_error(offset + m.start())
        elif ch == ")":
            if stack:
                stack.pop()
        elif ch == "," and stack and stack[-1] > 0:
            stack[-1] += 1
            limits.check_in_count(stack[-1], offset + m.start())


# Tokens that open / close a nesting level in sqlglot's recursive-descent parser.
_OPENERS = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE}
_CLOSERS = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END}
# Prefix operators sqlglot parses by recursion (one level per token).
_UNARY = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE}
# After these a NOT starts a boolean operand, so a run of NOTs there can be folded.
_BOOLEAN_START = {None, TokenType.L_PAREN, TokenType.AND, TokenType.OR}
_IN_LITERALS = {TokenType.STRING, TokenType.NUMBER, TokenType.NULL, TokenType.TRUE, TokenType.FALSE}
# IN lists at least this long skip sqlglot's per-literal parse (seconds for 100k values); shorter lists keep
# the general path so its error messages stay the same.
_FAST_IN_MIN = 32
_DOLLAR_QUOTE = re.compile(r"\$(?:[A-Za-z_]\w*)?\$")


class TokenScan:
    """One pass over sqlglot's tokens (the tokenizer is iterative) before the recursive parser runs:
    limits (nesting, IN-list length, literal size), misleading-token diagnoses, NOT-chain folding and
    the IN-list fast path (long literal lists become one placeholder token)."""

    def __init__(self, body: str, offset: int, limits: PredicateLimits, deadline: float | None = None) -> None:
        self.body = body
        self.deadline = deadline   # time.monotonic() past which run() stops (QueryTimeoutError)
        self.offset = offset
        self.limits = limits
        self.depth = 0
        self.in_lists: dict[str, tuple[object, ...]] = {}
        self._nonce: str | None = None   # drawn only when an IN list is replaced (os.urandom is a syscall)

    def run(self, toks: list[Token]) -> list[Token]:
        limits = self.limits
        out: list[Token] = []
        # One entry per open bracket: [is an IN list, values so far].
        frames: list[list[int]] = []
        i, n = 0, len(toks)
        while i < n:
            if self.deadline is not None and not i % 4096 and time.monotonic() > self.deadline:
                raise QueryTimeoutError()
            tok = toks[i]
            tt = tok.token_type
            prev = out[-1].token_type if out else None
            if tt == TokenType.NOT:
                j = i
                while j < n and toks[j].token_type == TokenType.NOT:
                    j += 1
                run = j - i
                if prev in _BOOLEAN_START:
                    # NOT NOT x is x in three-valued logic: keep one NOT for an odd run, none for an even one.
                    if run % 2:
                        out.append(tok)
                    i = j
                    continue
                if run > 1:
                    raise ParseError(f"unexpected NOT near {self.fragment(tok)!r}", position=self.pos(tok))
            if tt in _UNARY:
                j = i
                while j < n and toks[j].token_type in _UNARY:
                    j += 1
                if j - i > limits.max_depth:
                    raise limits.depth_error(self.pos(tok))
                self.depth = max(self.depth, len(frames) + j - i)
            if tt in _OPENERS:
                is_in = tt == TokenType.L_PAREN and prev == TokenType.IN
                if is_in:
                    fast = self.fast_in_list(toks, i)
                    if fast is not None:
                        i = fast(out)
                        continue
                # an array literal `array(…)` / `ARRAY[…]` (spec §8 list operators) counts like an IN list
                is_list = is_in or (prev == TokenType.ARRAY and tt in (TokenType.L_PAREN, TokenType.L_BRACKET))
                frames.append([is_list, 0])
                if len(frames) > limits.max_depth:
                    raise limits.depth_error(self.pos(tok))
                self.depth = max(self.depth, len(frames))
                if is_list and i + 1 < n and toks[i + 1].token_type not in _CLOSERS:
                    frames[-1][1] = 1
            elif tt in _CLOSERS:
                if frames:
                    frames.pop()
            elif tt == TokenType.COMMA and frames and frames[-1][0]:
                frames[-1][1] += 1
                limits.check_in_count(frames[-1][1], self.pos(tok))
            elif tt == TokenType.STRING:
                self.check_string(tok)
            elif tt == TokenType.NUMBER:
                self.check_number(tok, toks[i + 1] if i + 1 < n else None)
            elif tt in (TokenType.VAR, TokenType.PARAMETER) and tok.text.startswith("$"):
                if _DOLLAR_QUOTE.match(tok.text):
                    raise ParseError(f"dollar-quoted strings are not supported (use 'text'): "
                                     f"{self.fragment(tok)!r}", position=self.pos(tok))
                raise ParseError(f"parameters are not supported: {self.fragment(tok)!r}", position=self.pos(tok))
            out.append(tok)
            i += 1
        return out

    # ------------------------------------------------------------------ literals
    def check_string(self, tok: Token) -> None:
        text = tok.text
        if len(text) * 4 > self.limits.max_literal_bytes:
            self.limits.check_string(text, self.pos(tok))

    def check_number(self, tok: Token, nxt: Token | None) -> None:
        text = tok.text
        if nxt is not None and nxt.start == tok.end + 1 and nxt.token_type == TokenType.VAR:
            # sqlglot splits `0x10` into 0 and an alias x10; say what is really wrong.
            if text == "0" and nxt.text[:1] in ("x", "X"):
                raise ParseError(f"hexadecimal literals are not supported: {text + nxt.text!r}",
                                 position=self.pos(tok))
            raise ParseError(f"not a number: {text + nxt.text!r}", position=self.pos(tok))
        check_number_text(text, self.pos(tok), self.limits)

    # ------------------------------------------------------------------ IN fast path
    def fast_in_list(self, toks: list[Token], i: int) -> Callable[[list[Token]], int] | None:
        """If toks[i] opens an IN list of plain literals, a function that appends a placeholder for it and
        returns the index after its `)`; else None (the general path handles it)."""
        values: list[object] = []
        j, n = i + 1, len(toks)
        while j < n:
            tok = toks[j]
            tt = tok.token_type
            negate = False
            if tt == TokenType.DASH and j + 1 < n and toks[j + 1].token_type == TokenType.NUMBER:
                negate, j = True, j + 1
                tok, tt = toks[j], TokenType.NUMBER
            if tt not in _IN_LITERALS:
                return None
            if tt == TokenType.STRING:
                self.check_string(tok)
                values.append(tok.text)
            elif tt == TokenType.NUMBER:
                self.check_number(tok, toks[j + 1] if j + 1 < n else None)
                value = number_value(tok.text)
                if value is None:
                    return None
                values.append(negated_value(value) if negate else value)
            else:
                values.append(None if tt == TokenType.NULL else tt == TokenType.TRUE)
            self.limits.check_in_count(len(values), self.pos(tok))
            sep = toks[j + 1].token_type if j + 1 < n else None
            if sep == TokenType.R_PAREN:
                break
            if sep != TokenType.COMMA:
                return None
            j += 2
        else:
            return None
        if len(values) < _FAST_IN_MIN:
            return None
        close = j + 1
        if self._nonce is None:
            self._nonce = secrets.token_hex(8)
        key = f"\x00bgix-in:{self._nonce}:{len(self.in_lists)}"
        self.in_lists[key] = tuple(values)
        first, last = toks[i], toks[close]

        def emit(out: list[Token]) -> int:
            out.append(first)
            out.append(Token(TokenType.STRING, key, first.line, first.col, first.start + 1, last.end - 1))
            out.append(last)
            self.depth = max(self.depth, 1)
            return close + 1

        return emit

    def pos(self, tok: Token) -> int:
        return self.offset + tok.start

    def fragment(self, tok: Token) -> str:
        return self.body[tok.start:tok.start + 20]
