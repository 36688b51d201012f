"""SQL WHERE text → unbound predicate tree (sqlglot); ParseError carries the character position.

Grammar: docs/predicates.md. LIKE is kept as a `like` leaf here; bind.py rewrites it (spec §6).
Before sqlglot's recursive parser runs, one pass over its (iterative) tokenizer's output enforces
PredicateLimits, folds NOT chains and names misleading tokens (limits.py). Big texts made only of simple
terms are read by regexes (_text_chain); long IN lists and AND/OR chains of `column op literal` are built
straight from the tokens. Every fast path builds the same tree as the general one (tests compare them).
Imports sqlglot, tree, limits and operators only; never the reader or writer.
"""
from __future__ import annotations

import datetime as dt
import decimal
import re
import secrets
from typing import cast

import sqlglot.errors
import sqlglot.expressions as exp
from sqlglot import tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import Token, TokenType

from index_format.errors import ParseError
from index_format.predicate.limits import (
    DEFAULT_LIMITS, MAX_INTEGER_DIGITS, PredicateLimits, ensure_recursion_headroom,
)
from index_format.predicate.operators import FLIPPED
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, Leaf, Node, Not, Or


class _WhereDialect(Dialect):
    """Standard SQL literals: 'text' with '' escape (backslash is literal, so LIKE escapes survive),
    identifiers in "double quotes" or `backticks`."""

    class Tokenizer(tokens.Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ['"', "`"]
        STRING_ESCAPES = ["'"]


_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge",
}
_STRING_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.StartsWith: "starts_with", exp.EndsWith: "ends_with", exp.Contains: "contains",
}
_ANONYMOUS_FUNCTIONS = {
    "starts_with": "starts_with", "startswith": "starts_with", "ends_with": "ends_with",
    "endswith": "ends_with", "contains": "contains",
}
_LEADING_WHERE = re.compile(r"^\s*where\b", re.IGNORECASE)


def parse_where(text: str, *, limits: PredicateLimits = DEFAULT_LIMITS) -> Node:
    """Parse the text of a SQL WHERE clause (an optional leading `WHERE` is allowed).

    Raises:
        ParseError: unparsable text or unsupported syntax; `position` is the 0-based character offset
            of the offending fragment in `text`.
        PredicateLimitError: nesting, an IN list or a literal over `limits` (checked before parsing).
    """
    if not isinstance(text, str):
        raise ParseError(f"predicate text must be a string, got {type(text).__name__}", position=0)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ParseError("predicate text is not valid Unicode: lone surrogate", position=e.start) from None
    m = _LEADING_WHERE.match(text)
    offset = m.end() if m else 0
    body = text[offset:]
    if not body.strip():
        raise ParseError("empty predicate", position=len(text))
    if len(body) >= _TEXT_CHAIN_MIN:
        chain = _text_chain(body, offset, limits)
        if chain is not None:
            limits.check_tree(chain, offset)
            return chain
    if len(body) > _PRESCAN_MIN:
        _prescan(body, offset, limits)
    try:
        toks = _WhereDialect().tokenize(body)
    except sqlglot.errors.TokenError:
        what, pos = _tokenize_failure(body)
        raise ParseError(f"cannot tokenize: {what} near {body[pos:pos + 20]!r}", position=offset + pos) from None
    scan = _Scan(body, offset, limits)
    toks = scan.run(toks)
    fast = _simple_chain(toks)
    if fast is not None:
        limits.check_tree(fast, offset)
        return fast
    # The scan bounded nesting, so this much stack is enough for sqlglot (~20 frames per level) and us.
    ensure_recursion_headroom(40 * (scan.depth + 2))
    try:
        parsed = _WhereDialect().parser().parse(toks, body)
        if not parsed or parsed[0] is None:
            raise ParseError("empty predicate", position=len(text))
        tree = parsed[0] if len(parsed) == 1 else exp.Block(expressions=parsed)
        node = _Converter(body, offset, scan.in_lists).node(tree)
    except sqlglot.errors.ParseError as e:
        raise _from_sqlglot_error(e, body, offset) from None
    except RecursionError:
        # Safety net for constructs the scan does not count (its depth check runs first).
        raise limits.depth_error(offset) from None
    limits.check_tree(node, offset)
    return node


# sqlglot's tokenizer holds ~250 bytes per token and does ~4 µs of work per token: a 6 MB list of 3M values
# took 25 s and 1.6 GB before the token scan could refuse it. Texts over this size get a regex pass first.
_PRESCAN_MIN = 64 * 1024
_PRESCAN = re.compile(
    r"'[^']*(?:''[^']*)*'?"          # string literal ('' escapes a quote)
    r'|"[^"]*(?:""[^"]*)*"?'         # quoted name
    r"|`[^`]*`?"
    r"|--[^\n]*"
    r"|/\*.*?(?:\*/|\Z)"
    r"|\b(IN)\s*\("
    r"|[(),]",
    re.IGNORECASE | re.DOTALL)


def _prescan(body: str, offset: int, limits: PredicateLimits) -> None:
    """Refuse IN lists over the limit and parenthesis nesting over the limit without tokenizing
    (the token scan checks the same limits exactly; this pass only runs on big texts, to stop early)."""
    stack: list[int] = []  # per open parenthesis: values so far when it opened an IN list, else -1
    for m in _PRESCAN.finditer(body):
        ch = body[m.start()]
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


class _Scan:
    """One pass over sqlglot's tokens (the tokenizer is iterative) before the recursive parser runs:
    limits (nesting, IN-list length, literal size), misleading-token diagnoses, NOT-chain folding and
    the IN-list fast path (long literal lists become one placeholder token)."""

    def __init__(self, body: str, offset: int, limits: PredicateLimits) -> None:
        self.body = body
        self.offset = offset
        self.limits = limits
        self.depth = 0
        self.in_lists: dict[str, tuple[object, ...]] = {}
        self.nonce = secrets.token_hex(8)

    def run(self, toks: list[Token]) -> list[Token]:
        limits = self.limits
        out: list[Token] = []
        # One entry per open bracket: [is an IN list, values so far].
        frames: list[list] = []
        i, n = 0, len(toks)
        while i < n:
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
                frames.append([is_in, 0])
                if len(frames) > limits.max_depth:
                    raise limits.depth_error(self.pos(tok))
                self.depth = max(self.depth, len(frames))
                if is_in and i + 1 < n and toks[i + 1].token_type != TokenType.R_PAREN:
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
        _check_number_text(text, self.pos(tok), self.limits)

    # ------------------------------------------------------------------ IN fast path
    def fast_in_list(self, toks: list[Token], i: int):  # type: ignore[no-untyped-def]
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
                value = _number(tok.text)
                if value is None:
                    return None
                values.append(_negate(value) if negate else value)
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
        key = f"\x00bgix-in:{self.nonce}:{len(self.in_lists)}"
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


_CMP_TOKENS = {TokenType.EQ: "eq", TokenType.NEQ: "ne", TokenType.LT: "lt", TokenType.LTE: "le",
               TokenType.GT: "gt", TokenType.GTE: "ge"}
# Long AND/OR chains of `column op literal` skip sqlglot (its parse and our conversion are ~60% of the time
# for a big OR chain); shorter texts keep the general path and its messages.
_FAST_CHAIN_MIN = 64


def _simple_chain(toks: list[Token]) -> Node | None:
    """The tree of `[NOT] col op literal (AND|OR [NOT] col op literal)*` built straight from the tokens
    (AND binds tighter than OR, as in sqlglot; same tree as the general path), else None."""
    n = len(toks)
    if n < _FAST_CHAIN_MIN:
        return None
    groups: list[Node] = []
    terms: list[Node] = []
    i = 0
    while True:
        negated = i < n and toks[i].token_type == TokenType.NOT
        i += negated
        if i + 2 >= n:
            return None
        col, op = toks[i], _CMP_TOKENS.get(toks[i + 1].token_type)
        if col.token_type != TokenType.VAR or op is None:
            return None
        i += 2
        tok = toks[i]
        sign = tok.token_type == TokenType.DASH
        if sign:
            i += 1
            if i >= n or toks[i].token_type != TokenType.NUMBER:
                return None
            tok = toks[i]
        tt = tok.token_type
        if tt == TokenType.STRING:
            value: object = tok.text
        elif tt == TokenType.NUMBER:
            value = _number(tok.text)
            if value is None:
                return None
            if sign:
                value = _negate(value)
        elif tt in (TokenType.NULL, TokenType.TRUE, TokenType.FALSE):
            value = None if tt == TokenType.NULL else tt == TokenType.TRUE
        else:
            return None
        leaf = Leaf(op, col.text, value)
        terms.append(Not(leaf) if negated else leaf)
        i += 1
        if i == n:
            break
        tt = toks[i].token_type
        if tt == TokenType.OR:
            groups.append(And(*terms))
            terms = []
        elif tt != TokenType.AND:
            return None
        i += 1
    groups.append(And(*terms))
    return Or(*groups)


# Big texts that are only `[NOT] col op literal` terms joined by AND/OR skip even sqlglot's tokenizer
# (measured: 7 MB OR chain 33 s / 1 GB through sqlglot). Anything unusual returns None: the token path.
_TEXT_CHAIN_MIN = 4096
_WS = "[ \t\r\n]"
_LITERAL = (r"(?:'([^']*(?:''[^']*)*)'"                          # string body
            r"|(-?)(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![\w.$])"     # sign, number
            r"|(NULL|TRUE|FALSE)(?![\w$]))")                       # word
_TERM = re.compile(
    rf"{_WS}*((?:NOT{_WS}+)*)([A-Za-z_][A-Za-z0-9_]*){_WS}*"
    rf"(?:(<>|!=|<=|>=|=|<|>){_WS}*{_LITERAL}|{_WS}((?:NOT{_WS}+)?)IN{_WS}*\()",
    re.IGNORECASE)
_ITEM = re.compile(rf"{_WS}*{_LITERAL}{_WS}*([,)])", re.IGNORECASE)
_JOIN = re.compile(rf"{_WS}+(AND|OR){_WS}+|{_WS}*\Z", re.IGNORECASE)
_TEXT_OPS = {"=": "eq", "<>": "ne", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
# Column names that sqlglot would read as (part of) a keyword take the token path.
_KEYWORD_WORDS = frozenset(w for k in _WhereDialect.tokenizer_class.KEYWORDS for w in k.upper().split())


def _text_chain(body: str, offset: int, limits: PredicateLimits) -> Node | None:
    groups: list[Node] = []
    terms: list[Node] = []
    pos, n = 0, len(body)
    while True:
        m = _TERM.match(body, pos)
        if m is None:
            return None
        nots, col, op = m.group(1), m.group(2), m.group(3)
        if col.upper() in _KEYWORD_WORDS:
            return None
        if op is not None:
            value = _text_literal(body, m, 4, offset, limits)
            if value is _NO_VALUE:
                return None
            leaf: Node = Leaf(_TEXT_OPS[op], col, value)
            end = m.end()
        else:
            if nots:
                return None  # NOT x IN / NOT x NOT IN: leave the operator rewriting to the general path
            values: list[object] = []
            end = m.end()
            while True:
                item = _ITEM.match(body, end)
                if item is None:
                    return None
                value = _text_literal(body, item, 1, offset, limits)
                if value is _NO_VALUE:
                    return None
                values.append(value)
                limits.check_in_count(len(values), offset + item.end() - 1)
                end = item.end()
                if item.group(5) == ")":
                    break
            leaf = Leaf("not_in" if m.group(8) else "in", col, values=tuple(values))
        terms.append(Not(leaf) if nots.upper().count("NOT") % 2 else leaf)
        j = _JOIN.match(body, end)
        if j is None:
            return None
        if j.group(1) is None:
            break
        if j.group(1).upper() == "OR":
            groups.append(And(*terms))
            terms = []
        pos = j.end()
        if pos >= n:
            return None
    groups.append(And(*terms))
    return Or(*groups)


_NO_VALUE = object()


def _text_literal(body: str, m: re.Match[str], first: int, offset: int, limits: PredicateLimits) -> object:
    """The value of the _LITERAL groups starting at group `first` of `m` (string, sign, number, word)."""
    text, sign, number, word = m.group(first, first + 1, first + 2, first + 3)
    if text is not None:
        value = text.replace("''", "'")
        if len(value) * 4 > limits.max_literal_bytes:
            limits.check_string(value, offset + m.start(first) - 1)
        return value
    if number is not None:
        _check_number_text(number, offset + m.start(first + 2), limits)
        parsed = _number(number)
        if parsed is None:
            return _NO_VALUE
        return _negate(parsed) if sign else parsed
    return None if word.upper() == "NULL" else word.upper() == "TRUE"


def _check_number_text(text: str, position: int, limits: PredicateLimits) -> None:
    limits.check_digits(len(text), position)
    if text.isdigit() and len(text.lstrip("0")) > MAX_INTEGER_DIGITS:
        raise ParseError(f"integer literal has {len(text.lstrip('0'))} digits; no column type holds more "
                         f"than {MAX_INTEGER_DIGITS}", position=position)


def _number(text: str) -> object:
    """The value of a NUMBER token (int for plain digits, else an exact Decimal), None if it is not one."""
    if text.isascii() and text.isdigit():
        return int(text.lstrip("0") or "0")
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        return None


def _negate(value: object) -> object:
    if isinstance(value, decimal.Decimal):
        return value.copy_negate()  # keeps -0.0 (a distinct double key, spec §3)
    return -value  # type: ignore[operator]


def _tokenize_failure(body: str) -> tuple[str, int]:
    """What the tokenizer choked on and where: the first unterminated string, quoted name or comment."""
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch in "'\"`":
            j = i + 1
            while True:
                k = body.find(ch, j)
                if k < 0:
                    return ("unterminated string literal" if ch == "'" else "unterminated quoted name"), i
                if body.startswith(ch * 2, k):
                    j = k + 2  # a doubled quote is an escaped quote
                    continue
                break
            i = k + 1
        elif body.startswith("--", i):
            k = body.find("\n", i)
            i = n if k < 0 else k + 1
        elif body.startswith("/*", i):
            level, j = 1, i + 2
            while level and j < n:
                if body.startswith("/*", j):
                    level, j = level + 1, j + 2
                elif body.startswith("*/", j):
                    level, j = level - 1, j + 2
                else:
                    j += 1
            if level:
                return "unterminated comment (/* without */)", i
            i = j
        else:
            i += 1
    return "invalid character", 0


def _from_sqlglot_error(e: sqlglot.errors.ParseError, body: str, offset: int) -> ParseError:
    info = e.errors[0] if e.errors else {}
    line, col = info.get("line"), info.get("col")
    highlight = info.get("highlight") or ""
    if isinstance(line, int) and isinstance(col, int):
        # sqlglot reports the 1-based column of the highlighted token's last character.
        lines = body.split("\n")
        start = sum(len(x) + 1 for x in lines[: line - 1]) + max(col - len(highlight), 0)
    else:
        start = 0
    desc = str(info.get("description") or e).split("\n")[0]
    if desc.startswith("Required keyword"):
        desc = "incomplete expression"
    start = min(start, len(body))
    return ParseError(f"{desc} near {body[start:start + 20]!r}", position=offset + start)


class _Converter:
    """Maps a sqlglot expression to our nodes; anything else is a ParseError at the fragment."""

    def __init__(self, text: str, offset: int, in_lists: dict[str, tuple[object, ...]] | None = None) -> None:
        self.text = text
        self.offset = offset
        self.in_lists = in_lists or {}

    # ------------------------------------------------------------------ positions
    def span(self, node: exp.Expression) -> tuple[int, int]:
        """0-based inclusive [start, end] of `node` in the text (best effort: sqlglot keeps token positions
        only on identifiers and literals)."""
        starts, ends = [], []
        for sub in node.walk():
            meta = sub.meta if sub.meta else None
            if meta and "start" in meta and "end" in meta:
                starts.append(meta["start"])
                ends.append(meta["end"])
        lo = min(starts) if starts else 0
        sql = node.sql(dialect=_WhereDialect).lower()
        found = self.text.lower().find(sql, 0 if isinstance(node, exp.Query) else lo)
        if found >= 0:
            return found, found + len(sql) - 1
        if not starts:
            return 0, len(self.text) - 1
        hi = max(ends)
        # Keywords and parentheses carry no positions: close the parentheses the fragment opened.
        while self.text[lo:hi + 1].count("(") > self.text[lo:hi + 1].count(")"):
            nxt = self.text.find(")", hi + 1)
            if nxt < 0:
                break
            hi = nxt
        return lo, hi

    def error(self, node: exp.Expression, what: str) -> ParseError:
        start, end = self.span(node)
        fragment = self.text[start:end + 1]
        return ParseError(f"{what}: {fragment!r}", position=self.offset + start)

    # ------------------------------------------------------------------ boolean structure
    def node(self, e: exp.Expression) -> Node:
        if e.args.get("negate"):
            # sqlglot marks `a NOT LIKE p` (and, in some versions, NOT IN / NOT BETWEEN) with negate=True.
            positive = e.copy()
            positive.set("negate", None)
            return self.negated(positive)
        if isinstance(e, exp.Paren):
            return self.node(e.this)
        if isinstance(e, (exp.And, exp.Or)):
            # Flatten the chain so long AND/OR lists become balanced trees (tree._balanced), the same
            # shape json.from_json builds.
            parts = [self.node(cast(exp.Expression, x)) for x in e.flatten()]
            return And(*parts) if isinstance(e, exp.And) else Or(*parts)
        if isinstance(e, exp.Not):
            return self.negated(e.this)
        if isinstance(e, exp.Boolean):
            return TRUE if e.this else FALSE
        if isinstance(e, exp.Null):
            return UNKNOWN
        if isinstance(e, exp.Column):
            # A bare boolean column as a condition (`WHERE flag`) means `flag = TRUE`.
            return Leaf("eq", self.column(e), True)
        if type(e) in _COMPARISONS:
            return self.comparison(e, _COMPARISONS[type(e)])
        if isinstance(e, exp.In):
            return self.in_list(e)
        if isinstance(e, exp.Between):
            return Leaf("between", self.column(e.this), low=self.literal(e.args["low"]),
                        high=self.literal(e.args["high"]))
        if isinstance(e, exp.Is):
            if isinstance(e.expression, exp.Null):
                return Leaf("is_null", self.column(e.this))
            raise self.error(e, "only IS NULL / IS NOT NULL are supported")
        if isinstance(e, exp.Like):
            return Leaf("like", self.column(e.this), pattern=self.literal(e.expression))
        if isinstance(e, exp.Escape):
            return self.like_escape(e)
        if type(e) in _STRING_FUNCTIONS:
            return self.string_function(e, _STRING_FUNCTIONS[type(e)], [e.this, e.expression])
        if isinstance(e, exp.Anonymous) and e.name.lower() in _ANONYMOUS_FUNCTIONS:
            return self.string_function(e, _ANONYMOUS_FUNCTIONS[e.name.lower()], list(e.expressions))
        raise self.error(e, f"unsupported {_describe(e)}")

    def negated(self, e: exp.Expression) -> Node:
        inner = e.this if isinstance(e, exp.Paren) else e
        # NOT IN / NOT BETWEEN / IS NOT NULL are operators of their own (spec §5.4/§5.5).
        if isinstance(inner, (exp.In, exp.Between)) or (
            isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null)
        ):
            return ~self.node(inner)
        return Not(self.node(e))

    # ------------------------------------------------------------------ leaves
    def comparison(self, e: exp.Expression, op: str) -> Node:
        left, right = e.this, e.expression
        if isinstance(left, exp.Column) and not isinstance(right, exp.Column):
            return Leaf(op, self.column(left), self.literal(right))
        if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
            return Leaf(FLIPPED[op], self.column(right), self.literal(left))
        if isinstance(left, exp.Column):
            raise self.error(e, "comparing two columns is not supported")
        raise self.error(e, "a comparison needs a column on one side")

    def in_list(self, e: exp.In) -> Node:
        if e.args.get("query") is not None or e.args.get("unnest") is not None or e.args.get("field") is not None:
            raise self.error(e, "IN needs a list of literals")
        if len(e.expressions) == 1 and isinstance(e.expressions[0], exp.Literal) \
                and e.expressions[0].is_string and e.expressions[0].this in self.in_lists:
            return Leaf("in", self.column(e.this), values=self.in_lists[e.expressions[0].this])
        return Leaf("in", self.column(e.this), values=tuple(self.literal(v) for v in e.expressions))

    def like_escape(self, e: exp.Escape) -> Node:
        like = e.this
        escape = self.literal(e.expression)
        if not isinstance(like, exp.Like):
            raise self.error(e, f"unsupported {_describe(like)} with ESCAPE")
        if escape != "\\":
            # Our LIKE escape character is the backslash (spec §6); others would need re-writing the pattern.
            raise self.error(e.expression, "only ESCAPE '\\' is supported")
        return self.node(like)

    def string_function(self, e: exp.Expression, op: str, args: list[exp.Expression]) -> Node:
        if len(args) != 2 or args[0] is None or args[1] is None:
            raise self.error(e, f"{op}() takes a column and a string literal")
        return Leaf(op, self.column(args[0]), self.literal(args[1]))

    def column(self, e: exp.Expression) -> str:
        if not isinstance(e, exp.Column):
            raise self.error(e, f"expected a column, found {_describe(e)}")
        if e.table:
            raise self.error(e, "qualified column names (table.column) are not supported")
        return str(e.name)

    def literal(self, e: exp.Expression | None) -> object:
        if e is None:
            raise ParseError("missing literal", position=self.offset)
        if isinstance(e, exp.Paren):
            return self.literal(e.this)
        if isinstance(e, exp.Null):
            return None
        if isinstance(e, exp.Boolean):
            return bool(e.this)
        if isinstance(e, exp.Literal):
            return e.this if e.is_string else self.number(e, e.this)
        if isinstance(e, exp.Neg):
            value = self.literal(e.this)
            if isinstance(value, decimal.Decimal):
                return value.copy_negate()  # keeps -0.0 (a distinct double key, spec §3)
            if isinstance(value, int) and not isinstance(value, bool):
                return -value
            raise self.error(e, "only numbers can be negated")
        if isinstance(e, (exp.Cast, exp.TryCast)):
            return self.cast(e)
        if isinstance(e, exp.Column):
            raise self.error(e, "expected a literal, found a column")
        raise self.error(e, f"expected a literal, found {_describe(e)}")

    def number(self, e: exp.Expression, text: str) -> object:
        # Decimal keeps the exact digits for decimal columns; bind converts for float columns.
        value = _number(text)
        if value is None:
            raise self.error(e, "not a number")
        return value

    def cast(self, e: exp.Expression) -> object:
        value = self.literal(e.this)
        to = e.args.get("to")
        kind = to.this if isinstance(to, exp.DataType) else None
        if not isinstance(value, str) or kind is None:
            return value
        try:
            if kind == exp.DataType.Type.DATE:
                return dt.date.fromisoformat(value.strip())
            if kind in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME,
                        exp.DataType.Type.TIMESTAMPNTZ):
                return dt.datetime.fromisoformat(value.strip())
            if kind in (exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ):
                text = value.strip()
                parsed = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)
        except ValueError:
            raise self.error(e, f"invalid {kind.value} literal") from None
        # Other casts (CAST('NaN' AS DOUBLE), CAST('1.5' AS DECIMAL)) keep the text; bind coerces it.
        return value


def _describe(e: exp.Expression) -> str:
    if isinstance(e, (exp.Select, exp.Subquery, exp.Query)):
        return "subquery"
    if isinstance(e, exp.Binary):
        return f"expression ({e.key})"
    if isinstance(e, exp.Func):
        return f"function {e.sql_name().lower() if not isinstance(e, exp.Anonymous) else e.name}()"
    return f"syntax ({e.key})"
