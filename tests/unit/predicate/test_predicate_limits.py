"""Predicate limits (issue 10 items 1, 2, 9): nesting depth, IN-list length, literal size, NOT/AND/OR chains
that are wide rather than deep, the IN-list fast path, and parse messages that name the real problem."""
from __future__ import annotations

import decimal
import random
import sys

import pytest
from pyroaring import BitMap64

from index_format.errors import ParseError, PredicateLimitError
from index_format.global_index.filemeta import parse_meta
from index_format.global_index.reader import open_index
from index_format.global_index.writer import write_index_bytes
from index_format.predicate import bind, from_json, parse_where, rewrite_not, to_json
from index_format.predicate import sql as sql_module
from index_format.predicate import sql_fast, sql_scan
from index_format.predicate.answer import ColumnIndex, IndexFileRef, answer_over_files
from index_format.predicate.limits import DEFAULT_LIMITS, PredicateLimits, tree_depth
from index_format.predicate.tree import And, Leaf, Not, Or
from index_format.storage import BytesSource
from index_format.types import parse_type

ALPHA = Leaf("eq", "s", "alpha")


def limit_error(excinfo: pytest.ExceptionInfo[PredicateLimitError], name: str) -> PredicateLimitError:
    assert excinfo.value.limit == name
    assert name in str(excinfo.value)
    return excinfo.value


# ---------------------------------------------------------------- depth
def test_defaults() -> None:
    assert DEFAULT_LIMITS == PredicateLimits(64, 100_000, 65_536)
    with pytest.raises(ValueError):
        PredicateLimits(max_depth=0)


@pytest.mark.parametrize("levels", [1, 47, 64])
def test_parenthesized_nesting_up_to_the_limit_parses(levels: int) -> None:
    assert parse_where("(" * levels + "s = 'alpha'" + ")" * levels) == ALPHA


def test_parenthesized_nesting_over_the_limit_is_a_limit_error() -> None:
    with pytest.raises(PredicateLimitError) as e:
        parse_where("(" * 65 + "s = 'alpha'" + ")" * 65)
    err = limit_error(e, "BGIX_MAX_PREDICATE_DEPTH")
    assert "deeper than 64 levels" in str(err)
    assert err.position == 64  # the 65th parenthesis
    # A huge nesting is refused by the token scan, never reaching the recursive parser.
    with pytest.raises(PredicateLimitError):
        parse_where("(" * 100_000 + "s = 'alpha'" + ")" * 100_000)


def test_depth_limit_is_configurable() -> None:
    small = PredicateLimits(max_depth=8)
    assert parse_where("(" * 8 + "s = 'alpha'" + ")" * 8, limits=small) == ALPHA
    with pytest.raises(PredicateLimitError, match="deeper than 8 levels"):
        parse_where("(" * 9 + "s = 'alpha'" + ")" * 9, limits=small)
    deep = PredicateLimits(max_depth=300)
    assert parse_where("(" * 300 + "s = 'alpha'" + ")" * 300, limits=deep) == ALPHA


def test_function_and_case_nesting_count_as_depth() -> None:
    with pytest.raises(PredicateLimitError):
        parse_where("starts_with(s, " + "lower(" * 70 + "'a'" + ")" * 70 + ")")
    with pytest.raises(PredicateLimitError):
        parse_where("s = " + "CASE WHEN a = 1 THEN " * 70 + "1" + " END" * 70)


def test_real_nested_structure_at_the_limit() -> None:
    # a0 = 0 AND (a1 = 1 OR (a2 = 2 AND (...))) with 64 parenthesis levels: built independently below.
    n = 64
    parts = []
    for i in range(n):
        parts.append(f"a{i} = {i} {'AND' if i % 2 == 0 else 'OR'} (")
    text = "".join(parts) + f"a{n} = {n}" + ")" * n
    expected = Leaf("eq", f"a{n}", n)
    for i in reversed(range(n)):
        leaf = Leaf("eq", f"a{i}", i)
        expected = And(leaf, expected) if i % 2 == 0 else Or(leaf, expected)
    assert parse_where(text) == expected


def test_not_chains_are_flat_and_fold() -> None:
    assert parse_where("NOT " * 200 + "s = 'alpha'") == ALPHA
    assert parse_where("NOT " * 201 + "s = 'alpha'") == Not(ALPHA)
    assert parse_where("NOT " * 10_001 + "s = 'alpha' AND " + "NOT " * 4 + "t = 1") == And(Not(ALPHA),
                                                                                           Leaf("eq", "t", 1))
    # Inside parentheses the NOTs nest: each level counts.
    assert parse_where("NOT (" * 10 + "s = 'alpha'" + ")" * 10) == ALPHA
    with pytest.raises(PredicateLimitError):
        parse_where("NOT (" * 65 + "s = 'alpha'" + ")" * 65)


def test_repeated_not_outside_a_boolean_position_is_an_error() -> None:
    with pytest.raises(ParseError, match="unexpected NOT") as e:
        parse_where("x NOT NOT IN (1)")
    assert e.value.position == 2


def test_long_unary_chains_are_refused_before_the_parser() -> None:
    with pytest.raises(PredicateLimitError):
        parse_where("n = " + "- " * 500 + "1")
    assert parse_where("n = - 1") == Leaf("eq", "n", -1)


def _column(name: str, values: list[object]) -> ColumnIndex:
    kt = parse_type("string")
    data, written = write_index_bytes(values, list(range(len(values))), kt)
    ref = IndexFileRef(name, 0, len(values) - 1, parse_meta(kt, written.meta), len(data),
                       lambda: open_index(BytesSource(data), kt))
    return ColumnIndex(name, kt, [ref])


def test_or_chain_of_20000_terms_parses_binds_and_evaluates() -> None:
    terms = 20_000
    text = " OR ".join(f"s = 'v{i:05d}'" for i in range(terms))
    limit = sys.getrecursionlimit()
    node = parse_where(text)
    assert tree_depth(node) <= 17  # balanced: log2(20000) + 1
    bound = bind(node, {"s": parse_type("string")})
    assert from_json(to_json(node)) == node
    assert tree_depth(rewrite_not(Not(bound))) <= 18
    values = [f"v{i:05d}" for i in range(0, 2 * terms, 7)]  # every 7th exists below `terms`
    answer = answer_over_files(bound, {"s": _column("s", values)})
    truth = BitMap64(i for i, v in enumerate(values) if int(v[1:]) < terms)
    assert answer.rows == truth
    assert sys.getrecursionlimit() == limit  # a wide predicate needs no extra stack


def test_and_chain_through_redundant_parentheses() -> None:
    text = " AND ".join(f"(a{i} = {i})" for i in range(5000))   # 30,000 tokens: over the default budget
    node = parse_where(text, limits=PredicateLimits(max_tokens=40_000))
    assert node == And(*[Leaf("eq", f"a{i}", i) for i in range(5000)])


# ---------------------------------------------------------------- JSON depth
def _json_nested(levels: int) -> dict:
    obj: dict = {"op": "eq", "column": "s", "value": "alpha"}
    for i in range(levels):
        obj = {"op": "and" if i % 2 else "or", "args": [obj, {"op": "is_null", "column": "t"}]}
    return obj


def test_json_depth_limit() -> None:
    node = from_json(_json_nested(64))
    assert tree_depth(node) == 65
    with pytest.raises(PredicateLimitError) as e:
        from_json(_json_nested(65))
    err = limit_error(e, "BGIX_MAX_PREDICATE_DEPTH")
    assert isinstance(err.position, str) and err.position.startswith("$.args[0]")
    with pytest.raises(PredicateLimitError):
        from_json(_json_nested(5000))  # deeper than Python's recursion limit: refused, not a RecursionError
    assert from_json(_json_nested(5), limits=PredicateLimits(max_depth=5)) is not None
    with pytest.raises(PredicateLimitError):
        from_json(_json_nested(6), limits=PredicateLimits(max_depth=5))


def test_json_not_chain_is_flat() -> None:
    obj: dict = {"op": "eq", "column": "s", "value": "alpha"}
    for _ in range(5000):
        obj = {"op": "not", "arg": obj}
    assert from_json(obj) == ALPHA
    assert from_json({"op": "not", "arg": obj}) == Not(ALPHA)


def test_json_text_nesting_is_a_limit_error() -> None:
    with pytest.raises(PredicateLimitError):
        from_json("[" * 200_000 + "]" * 200_000)


def test_json_wide_or_round_trips() -> None:
    obj = {"op": "or", "args": [{"op": "eq", "column": "s", "value": f"v{i}"} for i in range(20_000)]}
    node = from_json(obj)
    assert node == Or(*[Leaf("eq", "s", f"v{i}") for i in range(20_000)])
    assert to_json(node) == obj


# ---------------------------------------------------------------- IN lists and literals
@pytest.mark.parametrize("fast", [True, False])
def test_in_list_limit(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not fast:
        monkeypatch.setattr(sql_scan, "_FAST_IN_MIN", 10**9)
    small = PredicateLimits(max_in_values=1000)
    ok = "n IN (" + ",".join(str(i) for i in range(1000)) + ")"
    assert parse_where(ok, limits=small).values == tuple(range(1000))
    with pytest.raises(PredicateLimitError) as e:
        parse_where(ok[:-1] + ",1000)", limits=small)
    limit_error(e, "BGIX_MAX_IN_VALUES")
    with pytest.raises(PredicateLimitError):
        parse_where("n IN (" + ",".join(["1"] * 100_001) + ")")


def test_json_in_list_limit() -> None:
    small = PredicateLimits(max_in_values=3)
    assert from_json({"op": "in", "column": "n", "values": [1, 2, 3]}, limits=small).values == (1, 2, 3)
    with pytest.raises(PredicateLimitError) as e:
        from_json({"op": "not_in", "column": "n", "values": [1, 2, 3, 4]}, limits=small)
    assert limit_error(e, "BGIX_MAX_IN_VALUES").position == "$.values"


def test_literal_size_limit() -> None:
    small = PredicateLimits(max_literal_bytes=16)
    assert parse_where("s = '" + "x" * 16 + "'", limits=small).value == "x" * 16
    with pytest.raises(PredicateLimitError) as e:
        parse_where("s = '" + "é" * 9 + "'", limits=small)  # 18 UTF-8 bytes
    assert limit_error(e, "BGIX_MAX_LITERAL_BYTES").position == 4
    with pytest.raises(PredicateLimitError):
        parse_where("n = " + "1" * 17, limits=small)
    with pytest.raises(PredicateLimitError):
        parse_where("n = 0." + "1" * 70_000)
    with pytest.raises(PredicateLimitError):
        parse_where("s IN (" + ",".join(["'a'"] * 40 + ["'" + "x" * 70_000 + "'"]) + ")")
    with pytest.raises(PredicateLimitError) as je:
        from_json({"op": "eq", "column": "s", "value": "x" * 17}, limits=small)
    assert limit_error(je, "BGIX_MAX_LITERAL_BYTES").position == "$.value"


def _random_literal(rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind == 0:
        return "'" + "".join(rng.choice("ab'é%_\\ ") for _ in range(rng.randrange(6))).replace("'", "''") + "'"
    if kind == 1:
        return str(rng.randrange(-10**20, 10**20))
    if kind == 2:
        return rng.choice(["1.5", "-0.0", "0.0", "1e3", "-2.50", ".5", "1E-7", "-1e308"])
    if kind == 3:
        return rng.choice(["NULL", "TRUE", "FALSE", "null", "true"])
    if kind == 4:
        return "-" + str(rng.randrange(10**6))
    if kind == 5:
        return "0" * rng.randrange(1, 4) + str(rng.randrange(100))
    if kind == 6:
        return "'" + str(rng.randrange(100)) + "'"
    return str(rng.randrange(10))


def test_in_list_fast_path_matches_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    texts = []
    for _ in range(30):
        lits = [_random_literal(rng) for _ in range(rng.randrange(32, 80))]
        sep = rng.choice([",", ", ", " , "])
        texts.append(f"x {rng.choice(['IN', 'NOT IN', 'in'])} ({sep.join(lits)}) AND y = 1")
    fast = [parse_where(t) for t in texts]
    monkeypatch.setattr(sql_scan, "_FAST_IN_MIN", 10**9)
    slow = [parse_where(t) for t in texts]
    for f, s, t in zip(fast, slow, texts, strict=True):
        assert f == s, t
        # Decimals compare equal across exponents; their signs and digits must match too.
        fl, sl = f.left, s.left  # type: ignore[attr-defined]
        assert [repr(v) for v in fl.values] == [repr(v) for v in sl.values], t
    assert any(isinstance(v, decimal.Decimal) for f in fast for v in f.left.values)  # type: ignore[attr-defined]


def test_in_list_fast_path_falls_back_for_expressions() -> None:
    lits = ",".join(str(i) for i in range(40))
    with pytest.raises(ParseError, match="expected a literal"):
        parse_where(f"x IN ({lits}, y)")
    with pytest.raises(ParseError):
        parse_where(f"x IN ({lits}, 1 + 2)")
    assert parse_where(f"x IN ({lits}, (7))").values == tuple(range(40)) + (7,)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- messages (item 9)
@pytest.mark.parametrize(("text", "message", "position"), [
    ("s = 'alpha' /*", "unterminated comment", 12),
    ("s = 'alpha' /* a /* b */", "unterminated comment", 12),
    ("s = 'alpha", "unterminated string literal", 4),
    ('"s = 1', "unterminated quoted name", 0),
    ("n = 0x10", "hexadecimal literals are not supported", 4),
    ("n = 0X1f", "hexadecimal literals are not supported", 4),
    ("s = $$a$$", "dollar-quoted strings are not supported", 4),
    ("s = $tag$a$tag$", "dollar-quoted strings are not supported", 4),
    ("s = $1", "parameters are not supported", 4),
    ("n = 1_000", "not a number: '1_000'", 4),
    ("WHERE n = 0x10", "hexadecimal", 10),
])
def test_parse_messages_name_the_real_problem(text: str, message: str, position: int) -> None:
    with pytest.raises(ParseError) as e:
        parse_where(text)
    assert message in str(e.value)
    assert e.value.position == position
    for wrong in ("alias", "two columns", "unterminated quote near"):
        assert wrong not in str(e.value)


def test_comments_still_work() -> None:
    assert parse_where("s = 'alpha' /* fine */") == ALPHA
    assert parse_where("s = 'alpha' -- trailing") == ALPHA
    assert parse_where("s = '/* not a comment'") == Leaf("eq", "s", "/* not a comment")


def _random_chain(rng: random.Random, terms: int, avoid: tuple[str, ...] = ()) -> str:
    out = []
    for k in range(terms):
        if k:
            out.append(rng.choice([" AND ", " OR ", " and ", " or "]))
        if rng.random() < 0.2:
            out.append("NOT " * rng.randrange(1, 4))
        col = rng.choice(["a", "b", "Col_1", "x9"])
        op = rng.choice(["=", "<>", "!=", "<", "<=", ">", ">="])
        lit = _random_literal(rng)
        while lit in avoid:
            lit = _random_literal(rng)
        out.append(f"{col} {op} {lit}" if rng.random() < 0.9 else f"{col}{op}{lit}")
    return "".join(out)


def test_simple_chain_fast_path_matches_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    texts = [_random_chain(rng, rng.randrange(20, 120)) for _ in range(60)]
    texts += ["WHERE " + " OR ".join(f"s = 'v{i}'" for i in range(200))]
    fast = [parse_where(t) for t in texts]
    monkeypatch.setattr(sql_fast, "_FAST_CHAIN_MIN", 10**9)
    monkeypatch.setattr(sql_scan, "_FAST_IN_MIN", 10**9)
    slow = [parse_where(t) for t in texts]
    for f, s, t in zip(fast, slow, texts, strict=True):
        assert f == s, t
        assert repr(f) == repr(s), t  # same Decimal exponents and signs (-0.0)


def test_simple_chain_fast_path_falls_back_on_anything_else() -> None:
    chain = " OR ".join(f"a = {i}" for i in range(100))
    with pytest.raises(ParseError, match="comparing two columns"):
        parse_where(chain + " OR a = b")
    with pytest.raises(ParseError):
        parse_where(chain + " OR")
    assert parse_where(chain + " OR (b = 1 AND c = 2)") == Or(*[Leaf("eq", "a", i) for i in range(100)],
                                                              And(Leaf("eq", "b", 1), Leaf("eq", "c", 2)))


def test_big_texts_are_refused_before_tokenizing(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_tokenize(self: object, sql: str) -> list:
        raise AssertionError("tokenized a text the regex pre-scan should have refused")

    monkeypatch.setattr(sql_module.WhereDialect, "tokenize", no_tokenize)
    with pytest.raises(PredicateLimitError, match="BGIX_MAX_IN_VALUES"):
        parse_where("n IN (" + ",".join(["1"] * 3_000_000) + ")")
    with pytest.raises(PredicateLimitError, match="BGIX_MAX_PREDICATE_DEPTH"):
        parse_where("(" * 40_000 + "a = 1" + ")" * 40_000)


def test_pre_scan_ignores_commas_and_parentheses_in_strings_and_comments() -> None:
    small = PredicateLimits(max_in_values=3, max_depth=4)
    filler = "/* " + "((((,,,, " * 10_000 + " */ "
    text = filler + "s IN ('a,b', 'c)d', '((((,,,,') AND t = '" + "(" * 60_000 + "' -- ((((,,,,\n"
    node = parse_where(text, limits=small)
    assert node == And(Leaf("in", "s", values=("a,b", "c)d", "((((,,,,")), Leaf("eq", "t", "(" * 60_000))


def test_text_chain_fast_path_matches_the_token_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    texts = [_random_chain(rng, rng.randrange(150, 300), avoid=(".5",)) for _ in range(40)]
    texts += [
        "WHERE " + " OR ".join(f"s = 'v''{i}'" for i in range(400)) + "  \n",
        " OR ".join(f"NOT {c} = {i}" for i, c in enumerate(["a", "date", "order", "x"] * 100)),
        " AND ".join(f"a={i}" for i in range(400)) + " OR a = 1::int",
        " OR ".join(f"a = {i}" for i in range(400)) + " OR a = 1e5x",
        " OR ".join(f"a = -{i}.0" for i in range(400)) + " or b <=> 1",
    ]
    used = []
    original = sql_module.text_chain

    def spy(*args: object) -> object:
        result = original(*args)  # type: ignore[arg-type]
        used.append(result is not None)
        return result

    monkeypatch.setattr(sql_module, "text_chain", spy)
    fast = []
    for t in texts:
        try:
            fast.append(repr(parse_where(t)))
        except ParseError as e:
            fast.append(f"error {e.position}")
    monkeypatch.setattr(sql_module, "TEXT_CHAIN_MIN", 10**9)
    for t, f in zip(texts, fast, strict=True):
        try:
            slow = repr(parse_where(t))
        except ParseError as e:
            slow = f"error {e.position}"
        assert f == slow, t[:200]
    assert sum(used) >= 15 and not all(used)


def test_short_texts_take_the_text_chain_with_the_same_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point and range queries of the hot path (a few terms) skip sqlglot: same tree or same error."""
    rng = random.Random(17)
    texts = [_random_chain(rng, rng.randrange(1, 8), avoid=(".5",)) for _ in range(300)]
    texts += ["k = 42", "k >= 'a' AND k < 'b'", "NOT k = -3", "k <> 1.5e3", "k = NULL", "k = TRUE", "k = 'it''s'",
              "k = 1::int", "k = 1 OR", "order = 1", "k IN (1, 2, 3)", "k NOT IN ('a', NULL)", "k = 1e400",
              "k BETWEEN 1 AND 2", "k = 0.1 AND j > -0.0"]
    used = []
    original = sql_module.text_chain

    def spy(*args: object) -> object:
        result = original(*args)  # type: ignore[arg-type]
        used.append(result is not None)
        return result

    def outcome(t: str) -> str:
        try:
            return repr(parse_where(t))
        except ParseError as e:
            return f"error {e.position}"

    monkeypatch.setattr(sql_module, "text_chain", spy)
    fast = [outcome(t) for t in texts]
    monkeypatch.setattr(sql_module, "TEXT_CHAIN_MIN", 10**9)
    for t, f in zip(texts, fast, strict=True):
        assert f == outcome(t), t
    assert sum(used) >= 200 and not all(used)


def test_text_chain_applies_the_literal_limits() -> None:
    chain = " OR ".join(f"a = {i}" for i in range(1000))
    with pytest.raises(ParseError, match="41 digits"):
        parse_where(chain + " OR a = " + "9" * 41)
    with pytest.raises(PredicateLimitError, match="BGIX_MAX_LITERAL_BYTES") as e:
        parse_where(chain + " OR a = '" + "x" * 70_000 + "'")
    assert e.value.position == len(chain) + 8


def test_text_chain_with_in_lists_matches_the_token_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(9)
    texts = []
    for _ in range(30):
        parts = []
        for k in range(rng.randrange(3, 12)):
            lits = [_random_literal(rng) for _ in range(rng.randrange(1, 200))]
            lits = [x for x in lits if x != ".5"] or ["1"]
            neg = rng.choice(["", "NOT ", "not "]) if rng.random() < 0.3 else ""
            prefix = "NOT " if rng.random() < 0.05 else ""
            parts.append(f"{prefix}c{k % 3} {neg}IN (" + rng.choice([",", ", ", " , "]).join(lits)
                         + rng.choice([")", " )"]))
            if rng.random() < 0.3:
                parts[-1] = f"c{k} = {_random_literal(rng)}"
        texts.append("".join(p + rng.choice([" AND ", " OR "]) for p in parts[:-1]) + parts[-1])
    texts += ["s IN (" + ",".join(f"'v{i}'" for i in range(2000)) + ")", "s IN (" + "1," * 2000 + ")",
              "s NOT IN (" + ", ".join(str(i) for i in range(2000)) + ", NULL) AND t IN ()"]
    texts = [t for t in texts if len(t) >= 4096] + [t.ljust(4096) for t in texts if len(t) < 4096]
    used = []
    original = sql_module.text_chain

    def spy(*args: object) -> object:
        result = original(*args)  # type: ignore[arg-type]
        used.append(result is not None)
        return result

    monkeypatch.setattr(sql_module, "text_chain", spy)

    def outcome(t: str) -> str:
        try:
            return repr(parse_where(t))
        except ParseError as e:
            return f"error {e.position}"

    fast = [outcome(t) for t in texts]
    monkeypatch.setattr(sql_module, "TEXT_CHAIN_MIN", 10**9)
    for t, f in zip(texts, fast, strict=True):
        assert f == outcome(t), t[:300]
    assert sum(used) >= 10 and not all(used)


def test_in_list_limit_position_on_every_path() -> None:
    small = PredicateLimits(max_in_values=50)
    for text in ("n IN (" + ",".join(["1"] * 5000) + ")", "n IN (" + ",".join(["'a'"] * 100) + ")"):
        for padded in (text, text + " " * 5000, text + " AND (x = 1)"):
            with pytest.raises(PredicateLimitError) as e:
                parse_where(padded, limits=small)
            assert isinstance(e.value.position, int) and 6 <= e.value.position <= len(text)


def test_mutated_big_texts_agree_between_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    # Damage a valid big chain at random: the fast text path must either decline or give the same answer
    # (or the same error position) as the token path.
    rng = random.Random(13)
    base = " OR ".join(f"a{i % 7} = {_random_literal(rng)}" if i % 5 else f"b IN (1, 'x', -2.5, NULL)"
                       for i in range(400))
    alphabet = "'\"`()=<>!-,.;: \n\tNOTANDORIN019aé$/*"
    texts = []
    for _ in range(60):
        chars = list(base)
        for _ in range(rng.randrange(1, 4)):
            k = rng.randrange(len(chars))
            action = rng.randrange(3)
            if action == 0:
                del chars[k]
            elif action == 1:
                chars.insert(k, rng.choice(alphabet))
            else:
                chars[k] = rng.choice(alphabet)
        texts.append("".join(chars))

    def outcome(t: str) -> str:
        try:
            return repr(parse_where(t))
        except (ParseError, PredicateLimitError) as e:
            return f"{type(e).__name__} {e.position}"

    fast = [outcome(t) for t in texts]
    monkeypatch.setattr(sql_module, "TEXT_CHAIN_MIN", 10**9)
    for t, f in zip(texts, fast, strict=True):
        assert f == outcome(t), t
