"""Refusing big SQL predicates is cheap and a parse stops at its deadline (issue 34, defect 5).

The general (sqlglot) path reads at most PredicateLimits.max_tokens tokens outside IN lists of literals; texts of
plain terms of any length still take the chain reader, whose C-speed shape check must accept everything the
chain reader accepts (checked on random texts); a parse past its deadline raises QueryTimeoutError.
"""
from __future__ import annotations

import random
import time

import pytest

from index_format.errors import PredicateLimitError, QueryTimeoutError
from index_format.predicate import parse_where
from index_format.predicate.limits import DEFAULT_LIMITS, TOKEN_LIMIT, PredicateLimits
from index_format.predicate.sql_fast import chain_shaped, text_chain
from index_format.predicate.tree import And, Leaf, Or


def _text(term, n: int, joiner: str = " OR ") -> str:  # type: ignore[no-untyped-def]
    return joiner.join(term(i) for i in range(n))


SLOW_SHAPES = {
    "parenthesized": _text(lambda i: f"(a = {i})", 20_000),
    "column against column": _text(lambda i: f"(a = b{i})", 20_000),
    "deep parentheses": _text(lambda i: "(" * 20 + f"a = {i}" + ")" * 20, 2_000, " AND "),
    "between": _text(lambda i: f"a BETWEEN {i} AND {i + 1}", 20_000),
    "chain broken at its end": _text(lambda i: f"a = {i}", 30_000) + " OR (",
    "like": _text(lambda i: f"a LIKE 'x{i}%'", 20_000),
}


@pytest.mark.parametrize("shape", sorted(SLOW_SHAPES))
def test_big_general_texts_are_refused_by_their_token_count(shape: str) -> None:
    with pytest.raises(PredicateLimitError) as e:
        parse_where(SLOW_SHAPES[shape])
    assert e.value.limit == TOKEN_LIMIT and "BGIX_MAX_PREDICATE_TOKENS" in str(e.value)


def test_plain_chains_and_in_lists_are_not_bound_by_the_token_budget() -> None:
    limits = PredicateLimits(max_tokens=100)
    text = _text(lambda i: f"a = {i}", 30_000)
    assert parse_where(text, limits=limits) == Or(*[Leaf("eq", "a", i) for i in range(30_000)])
    # an IN list in the general path: its literals are not counted
    values = tuple(range(50_000))
    node = parse_where(f"(a IN ({', '.join(map(str, values))})) AND b LIKE 'x%'", limits=limits)
    assert node == And(Leaf("in", "a", values=values), Leaf("like", "b", pattern="x%"))


def test_an_in_list_over_its_limit_is_refused_while_tokenizing() -> None:
    limits = PredicateLimits(max_in_values=1000)
    with pytest.raises(PredicateLimitError) as e:
        parse_where(f"(a IN ({', '.join(map(str, range(5000)))})) AND b LIKE 'x%'", limits=limits)
    assert e.value.limit == "BGIX_MAX_IN_VALUES"


@pytest.mark.parametrize("shape", ["parenthesized", "chain broken at its end"])
def test_a_parse_stops_at_its_deadline(shape: str) -> None:
    limits = PredicateLimits(max_tokens=10_000_000)   # the general parser would take it all
    with pytest.raises(QueryTimeoutError):
        parse_where(SLOW_SHAPES[shape], limits=limits, deadline=time.monotonic() - 1)


def _random_chain(rng: random.Random) -> str:
    """A chain of terms with random spacing, case and literals, then perhaps mutated at one place."""
    ws = lambda: rng.choice(["", " ", "  ", "\t", "\n "])  # noqa: E731
    ws1 = lambda: rng.choice([" ", "  ", "\t", "\n"])  # noqa: E731
    lit = lambda: rng.choice(["1", "-2", "3.5", "1e3", "2E-4", "'x'", "'it''s'", "''", "NULL", "true", "False",  # noqa: E731
                              "007", "1.", "x", "'a", "-'b'", "- 1"])
    terms = []
    for _ in range(rng.randint(1, 4)):
        nots = rng.choice(["", "NOT ", "not  NOT ", "NOT"])
        col = rng.choice(["a", "b1", "_c", "And", "IN", "x$", "select", "1a"])
        if rng.random() < 0.6:
            term = f"{nots}{col}{ws()}{rng.choice(['=', '<>', '!=', '<', '<=', '>', '>=', '=='])}{ws()}{lit()}"
        else:
            items = f"{ws()},{ws()}".join(lit() for _ in range(rng.randint(0, 3)))
            term = f"{nots}{col}{ws1()}{rng.choice(['', 'NOT ', 'not'])}{rng.choice(['IN', 'in'])}{ws()}({items})"
        terms.append(term)
    text = ws()
    for i, term in enumerate(terms):
        text += term if i == 0 else f"{ws1()}{rng.choice(['AND', 'or', 'Or', 'XOR'])}{ws1()}{term}"
    text += ws()
    if rng.random() < 0.4:
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(["", "(", ")", ",", "'", " ", "NOT ", "1"]) + text[at + rng.randint(0, 2):]
    return text


def test_the_shape_check_accepts_all_the_chain_reader_reads() -> None:
    rng = random.Random(34)
    read = 0
    for _ in range(20_000):
        text = _random_chain(rng)
        try:
            reads = text_chain(text, 0, DEFAULT_LIMITS) is not None
        except Exception:   # noqa: BLE001 — a limit or number error: the chain reader read that far
            reads = True
        if reads:
            read += 1
            assert chain_shaped(text), text
    assert read > 500   # the random texts did exercise the chain reader (926 with this seed)
