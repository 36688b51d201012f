"""Fast paths of the SQL reader that build the same tree as the general path (tests compare them): long
AND/OR chains of `column op literal` straight from the tokens, and big texts of simple terms by regexes.
Anything unusual returns None, and the caller takes the general path.
"""
from __future__ import annotations

import re
import time

from sqlglot.tokenizer_core import Token, TokenType

from index_format.errors import QueryTimeoutError
from index_format.predicate.limits import PredicateLimits
from index_format.predicate.sql_tokens import WhereDialect, check_number_text, negated_value, number_value
from index_format.predicate.tree import And, Leaf, Node, Not, Or


_CMP_TOKENS = {TokenType.EQ: "eq", TokenType.NEQ: "ne", TokenType.LT: "lt", TokenType.LTE: "le",
               TokenType.GT: "gt", TokenType.GTE: "ge"}
# Long AND/OR chains of `column op literal` skip sqlglot (its parse and our conversion are ~60% of the time
# for a big OR chain); shorter texts keep the general path and its messages.
_FAST_CHAIN_MIN = 64


def simple_chain(toks: list[Token]) -> Node | None:
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
            value = number_value(tok.text)
            if value is None:
                return None
            if sign:
                value = negated_value(value)
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


# Texts that are only `[NOT] col op literal` terms joined by AND/OR skip even sqlglot's tokenizer: big ones
# (measured: 7 MB OR chain 33 s / 1 GB through sqlglot) and the short point and range queries of the hot
# path (~10 µs instead of ~250 µs through sqlglot). Anything unusual returns None: the token path.
TEXT_CHAIN_MIN = 0
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
# The whole grammar text_chain reads, as one regex run by re's C engine (each term atomic and the repetition
# possessive, as text_chain matches term after term without going back): a big text text_chain would read
# through and then refuse at its end costs ~20 ms per MB here instead of ~0.5 s there. It accepts everything
# text_chain accepts (text_chain's further checks, such as keyword column names, may still decline).
_LITERAL_NC = (r"(?:'[^']*+(?:''[^']*+)*+'|-?\d++(?:\.\d++)?(?:[eE][+-]?\d++)?(?![\w.$])"
               r"|(?:NULL|TRUE|FALSE)(?![\w$]))")
_TERM_NC = (rf"(?>{_WS}*+(?:NOT{_WS}++)*+[A-Za-z_][A-Za-z0-9_]*+(?:{_WS}*+(?:<>|!=|<=|>=|=|<|>){_WS}*+{_LITERAL_NC}"
            rf"|{_WS}++(?:NOT{_WS}++)?IN{_WS}*+\((?:{_WS}*+{_LITERAL_NC}{_WS}*+,)*+{_WS}*+{_LITERAL_NC}{_WS}*+\)))")
_CHAIN_SHAPE = re.compile(rf"{_TERM_NC}(?:{_WS}++(?:AND|OR){_WS}++{_TERM_NC})*+{_WS}*+", re.IGNORECASE)


def chain_shaped(body: str) -> bool:
    """Whether `body` has text_chain's shape (necessary, not sufficient, for text_chain to read it)."""
    return _CHAIN_SHAPE.fullmatch(body) is not None


_TEXT_OPS = {"=": "eq", "<>": "ne", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
# Column names that sqlglot would read as (part of) a keyword take the token path.
_KEYWORD_WORDS = frozenset(w for k in WhereDialect.tokenizer_class.KEYWORDS for w in k.upper().split())


def text_chain(body: str, offset: int, limits: PredicateLimits, deadline: float | None = None) -> Node | None:
    """The tree of a text of `[NOT] col op literal` and `col [NOT] IN (literals)` terms joined by AND/OR, else
    None. Raises QueryTimeoutError once `deadline` (time.monotonic()) has passed (checked every 1024 terms)."""
    groups: list[Node] = []
    terms: list[Node] = []
    pos, n = 0, len(body)
    while True:
        if deadline is not None and not len(terms) % 1024 and time.monotonic() > deadline:
            raise QueryTimeoutError()
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
        check_number_text(number, offset + m.start(first + 2), limits)
        parsed = number_value(number)
        if parsed is None:
            return _NO_VALUE
        return negated_value(parsed) if sign else parsed
    return None if word.upper() == "NULL" else word.upper() == "TRUE"
