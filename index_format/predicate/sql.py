"""SQL WHERE text → unbound predicate tree (sqlglot); ParseError carries the character position.

Grammar: docs/predicates.md. LIKE is kept as a `like` leaf here; bind.py rewrites it (spec §6).
Before sqlglot's recursive parser runs, one pass over its (iterative) tokenizer's output enforces
PredicateLimits, folds NOT chains and names misleading tokens (sql_scan.py). Big texts made only of simple
terms are read by regexes; long IN lists and AND/OR chains of `column op literal` are built straight from the
tokens (sql_fast.py). Every fast path builds the same tree as the general one (tests compare them).
Imports sqlglot, tree, limits, operators and the sql_* helpers only; never the reader or writer.
"""
from __future__ import annotations

import datetime as dt
import decimal
import re
import traceback

import sqlglot.errors
import sqlglot.expressions as exp

from index_format.errors import ParseError, PredicateError
from index_format.predicate.limits import DEFAULT_LIMITS, PredicateLimits, ensure_recursion_headroom
from index_format.predicate.operators import FLIPPED
from index_format.predicate.sql_fast import TEXT_CHAIN_MIN, chain_shaped, simple_chain, text_chain
from index_format.predicate.sql_scan import PRESCAN_MIN, TokenScan, prescan
from index_format.predicate.sql_tokens import WhereDialect, number_value, tokenize
from index_format.predicate.tree import FALSE, TRUE, UNKNOWN, And, Leaf, Node, Not, Or

_COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge",
}
_STRING_FUNCTIONS: dict[type[exp.Expr], str] = {
    exp.StartsWith: "starts_with", exp.EndsWith: "ends_with", exp.Contains: "contains",
}
_ANONYMOUS_FUNCTIONS = {
    "starts_with": "starts_with", "startswith": "starts_with", "ends_with": "ends_with",
    "endswith": "ends_with", "contains": "contains",
}
# spec §8: array predicates, in Paimon's/Spark's and DataFusion's spellings (sqlglot already maps some
# spellings to its own expressions: array_has → ArrayContains, array_has_all → ArrayContainsAll).
_ARRAY_FUNCTIONS: dict[type[exp.Expr], str] = {
    exp.ArrayContains: "array_contains", exp.ArrayContainsAll: "array_contains_all",
    exp.ArrayOverlaps: "arrays_overlap",
}
_ANONYMOUS_ARRAY_FUNCTIONS = {
    "array_contains": "array_contains", "array_has": "array_contains",
    "arrays_overlap": "arrays_overlap", "array_has_any": "arrays_overlap",
    "array_contains_all": "array_contains_all", "array_has_all": "array_contains_all",
}
_LEADING_WHERE = re.compile(r"^\s*where\b", re.IGNORECASE)


def parse_where(text: str, *, limits: PredicateLimits = DEFAULT_LIMITS, deadline: float | None = None) -> Node:
    """Parse the text of a SQL WHERE clause (an optional leading `WHERE` is allowed).

    Refusing costs little whatever the size: a big text goes to the regex reader only if one C-speed regex
    finds its shape (sql_fast.chain_shaped), and the general path stops tokenizing past limits.max_tokens
    tokens outside IN lists, before sqlglot's parser (~10 µs a token) runs. `deadline` (time.monotonic()
    seconds): the reading stops there (the request that wanted it has been answered 503 by then).

    Raises:
        ParseError: unparsable text or unsupported syntax; `position` is the 0-based character offset
            of the offending fragment in `text`.
        PredicateLimitError: nesting, an IN list, a literal or the token count over `limits` (checked before
            parsing).
        QueryTimeoutError: `deadline` passed.
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
    big = len(body) > PRESCAN_MIN
    shaped = big and chain_shaped(body)
    if big and (body.count(",") >= limits.max_in_values or body.count("(") > limits.max_depth):
        # only then can an IN list or the nesting be over its limit: refused here, at C speed, before reading
        # term by term (the tokenizer also stops at the IN-list limit and the token budget, ~100 times slower
        # per byte). A chain-shaped text is read without the token budget.
        prescan(body, offset, limits, count_tokens=not shaped)
    if len(body) >= TEXT_CHAIN_MIN and (not big or shaped):
        chain = text_chain(body, offset, limits, deadline)
        if chain is not None:
            limits.check_tree(chain, offset)
            return chain
    try:
        toks = tokenize(body, limits, deadline, offset)
    except sqlglot.errors.TokenError:
        what, pos = _tokenize_failure(body)
        raise ParseError(f"cannot tokenize: {what} near {body[pos:pos + 20]!r}", position=offset + pos) from None
    scan = TokenScan(body, offset, limits, deadline)
    toks = scan.run(toks)
    fast = simple_chain(toks)
    if fast is not None:
        limits.check_tree(fast, offset)
        return fast
    # The scan bounded nesting, so this much stack is enough for sqlglot (~20 frames per level) and us.
    ensure_recursion_headroom(40 * (scan.depth + 2))
    parsed: list[exp.Expr | None] = []
    failure: PredicateError | None = None
    try:
        parsed = WhereDialect().parser().parse(toks, body)
        if not parsed or parsed[0] is None:
            raise ParseError("empty predicate", position=len(text))
        tree = parsed[0] if len(parsed) == 1 else exp.Block(expressions=parsed)
        node = _Converter(body, offset, scan.in_lists).node(tree)
    except sqlglot.errors.ParseError as e:
        failure = _from_sqlglot_error(e, body, offset)
        # sqlglot's raise_error frame holds the error it raised, whose traceback holds that frame: a cycle that
        # keeps the parser, every token and the text alive until a full garbage collection.
        drop_traceback(e)
    except RecursionError as e:
        # Safety net for constructs the scan does not count (its depth check runs first).
        failure = limits.depth_error(offset)
        drop_traceback(e)
    finally:
        for parsed_tree in parsed:
            unlink(parsed_tree)
    if failure is not None:
        try:
            raise failure   # raised outside the handler: it keeps no reference to sqlglot's error
        finally:
            failure = None   # nor does this frame (in its traceback) keep a reference to it
    limits.check_tree(node, offset)
    return node


def unlink(tree: exp.Expr | None) -> None:
    """Drop the parent links of a sqlglot tree once it has been read.

    Every node points at its parent and the parent at the node, so a dropped tree is cyclic garbage: with the
    serving process's rare collections (service.server.gc_tuning) the trees of large predicates, and the literal
    text they hold, would pile up. Without the links reference counting frees the tree at once.
    """
    if tree is not None:
        for sub in list(tree.bfs()):
            sub.parent = None


def drop_traceback(e: BaseException) -> None:
    """Unlink the sqlglot trees the parser's frames in `e`'s traceback were building (see unlink), clear those
    frames' variables and drop the traceback, so nothing of a failed parse outlives it in a reference cycle."""
    tb = e.__traceback__.tb_next if e.__traceback__ is not None else None   # past parse_where's own frame:
    while tb is not None:   # reading a running frame's f_locals would store them (and `e`) on that frame
        for value in tb.tb_frame.f_locals.values():
            if isinstance(value, exp.Expression):
                unlink(value)
        tb = tb.tb_next
    traceback.clear_frames(e.__traceback__)
    e.__traceback__ = None


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
    def span(self, node: exp.Expr) -> tuple[int, int]:
        """0-based inclusive [start, end] of `node` in the text (best effort: sqlglot keeps token positions
        only on identifiers and literals)."""
        starts, ends = [], []
        for sub in node.walk():
            meta = sub.meta if sub.meta else None
            if meta and "start" in meta and "end" in meta:
                starts.append(meta["start"])
                ends.append(meta["end"])
        lo = min(starts) if starts else 0
        sql = node.sql(dialect=WhereDialect).lower()
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

    def error(self, node: exp.Expr, what: str) -> ParseError:
        start, end = self.span(node)
        fragment = self.text[start:end + 1]
        return ParseError(f"{what}: {fragment!r}", position=self.offset + start)

    # ------------------------------------------------------------------ boolean structure
    def node(self, e: exp.Expr) -> Node:
        if e.args.get("negate"):
            # sqlglot marks `a NOT LIKE p` (and, in some versions, NOT IN / NOT BETWEEN) with negate=True.
            positive = e.copy()
            positive.set("negate", None)
            try:
                return self.negated(positive)
            finally:
                unlink(positive)   # the copy is a tree of its own (see unlink)
        if isinstance(e, exp.Paren):
            return self.node(e.this)
        if isinstance(e, (exp.And, exp.Or)):
            # Flatten the chain so long AND/OR lists become balanced trees (tree._balanced), the same
            # shape json.from_json builds.
            parts = [self.node(x) for x in e.flatten()]
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
        if type(e) in _ARRAY_FUNCTIONS:
            extra = [v for k, v in e.args.items() if k not in ("this", "expression") and v]
            return self.array_function(e, _ARRAY_FUNCTIONS[type(e)], [e.this, e.expression, *extra])
        if isinstance(e, exp.Anonymous) and e.name.lower() in _ANONYMOUS_ARRAY_FUNCTIONS:
            return self.array_function(e, _ANONYMOUS_ARRAY_FUNCTIONS[e.name.lower()], list(e.expressions))
        raise self.error(e, f"unsupported {_describe(e)}")

    def negated(self, e: exp.Expr) -> Node:
        inner = e.this if isinstance(e, exp.Paren) else e
        # NOT IN / NOT BETWEEN / IS NOT NULL are operators of their own (spec §5.4/§5.5).
        if isinstance(inner, (exp.In, exp.Between)) or (
            isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null)
        ):
            return ~self.node(inner)
        return Not(self.node(e))

    # ------------------------------------------------------------------ leaves
    def comparison(self, e: exp.Expr, op: str) -> Node:
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

    def string_function(self, e: exp.Expr, op: str, args: list[exp.Expr]) -> Node:
        if len(args) != 2 or args[0] is None or args[1] is None:
            raise self.error(e, f"{op}() takes a column and a string literal")
        return Leaf(op, self.column(args[0]), self.literal(args[1]))

    def array_function(self, e: exp.Expr, op: str, args: list[exp.Expr]) -> Node:
        """spec §8: `array_contains(col, v)`, `arrays_overlap(col, array(v, …))`, `array_contains_all(col,
        ARRAY[v, …])`: the ARRAY column first, then one literal or one array literal of literals."""
        name = e.name.lower() if isinstance(e, exp.Anonymous) else op
        one = op == "array_contains"
        needs = "a literal" if one else "an array literal (array(v1, …) or ARRAY[v1, …])"
        if len(args) != 2 or args[0] is None or args[1] is None:
            raise self.error(e, f"{name}() takes two arguments: an ARRAY column, then {needs}")
        col, arg = args
        if not isinstance(col, exp.Column):
            raise self.error(e, f"{name}() takes the ARRAY column as its first argument, found {_describe(col)}")
        if one:
            if isinstance(arg, exp.Array):
                raise self.error(arg, f"{name}() takes one element literal, not an array "
                                      f"(arrays_overlap / array_contains_all take a list)")
            return Leaf(op, self.column(col), self.literal(arg))
        if not isinstance(arg, exp.Array):
            raise self.error(arg, f"{name}() takes {needs} as its second argument, found {_describe(arg)}")
        return Leaf(op, self.column(col), values=tuple(self.literal(v) for v in arg.expressions))

    def column(self, e: exp.Expr) -> str:
        if not isinstance(e, exp.Column):
            raise self.error(e, f"expected a column, found {_describe(e)}")
        if e.table:
            raise self.error(e, "qualified column names (table.column) are not supported")
        return str(e.name)

    def literal(self, e: exp.Expr | None) -> object:
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

    def number(self, e: exp.Expr, text: str) -> object:
        # Decimal keeps the exact digits for decimal columns; bind converts for float columns.
        value = number_value(text)
        if value is None:
            raise self.error(e, "not a number")
        return value

    def cast(self, e: exp.Expr) -> object:
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


def _describe(e: exp.Expr) -> str:
    if isinstance(e, (exp.Select, exp.Subquery, exp.Query)):
        return "subquery"
    if isinstance(e, exp.Binary):
        return f"expression ({e.key})"
    if isinstance(e, exp.Func):
        return f"function {e.sql_name().lower() if not isinstance(e, exp.Anonymous) else e.name}()"
    return f"syntax ({e.key})"
