"""Test-side predicate tools: a seeded random generator of JSON predicate trees, a SQL renderer, and a
pandas oracle that evaluates the same tree on the source rows with SQL three-valued logic.

The oracle is independent of index_format (plain pandas/numpy), so answers are checked, not echoed.
"""
from __future__ import annotations

import random
import re
from typing import Any

import numpy as np
import pandas as pd

STRING_VALUES = {
    "status": ["vip", "trial", "free", "churned", "", "Ünïcode", "v"],
    "country": ["US", "DE", "FR", "JP", "BR", "IN", "C'te"],
}
ABSENT_STRINGS = ["zzz", "a", "Vip", "US ", "ZZ"]
STRING_FRAGMENTS = ["v", "vi", "t", "r", "U", "Ü", "e", "", "i", "n", "'"]


def make_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """Rows with nulls in every column: two strings, an int and a double (no NaN, no -0.0)."""
    def strings(col: str, null_rate: float) -> list[str | None]:
        vals = rng.choice(STRING_VALUES[col], size=n).tolist()
        return [None if rng.random() < null_rate else v for v in vals]

    ages = rng.integers(0, 91, size=n)
    age_null = rng.random(n) < 0.06
    scores = np.round(rng.random(n) * 50, 1) + 0.5
    score_null = rng.random(n) < 0.05
    return pd.DataFrame({
        "status": pd.array(strings("status", 0.1), dtype="string"),
        "country": pd.array(strings("country", 0.08), dtype="string"),
        "age": pd.Series(ages, dtype="Int64").mask(age_null),
        "score": pd.Series(scores, dtype="Float64").mask(score_null),
    })


# ---- generator -----------------------------------------------------------------------------------
def _literal(rnd: random.Random, col: str, df: pd.DataFrame) -> Any:
    if col in STRING_VALUES:
        return rnd.choice(STRING_VALUES[col] + ABSENT_STRINGS[:2])
    if col == "age":
        return rnd.randint(-5, 95)
    present = df["score"].dropna()
    return float(present.iloc[rnd.randrange(len(present))]) if rnd.random() < 0.6 else rnd.randint(0, 52) + 0.25


def random_leaf(rnd: random.Random, df: pd.DataFrame) -> dict[str, Any]:
    col = rnd.choice(["status", "country", "age", "score"])
    ops = ["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "between", "not_between",
           "is_null", "is_not_null"]
    if col in STRING_VALUES:
        ops += ["starts_with", "ends_with", "contains", "like", "eq", "in"]
    op = rnd.choice(ops)
    leaf: dict[str, Any] = {"op": op, "column": col}
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        leaf["value"] = _literal(rnd, col, df)
    elif op in ("in", "not_in"):
        leaf["values"] = [_literal(rnd, col, df) for _ in range(rnd.randint(1, 4))]
        if rnd.random() < 0.1:
            leaf["values"].append(None)
    elif op in ("between", "not_between"):
        a, b = _literal(rnd, col, df), _literal(rnd, col, df)
        leaf["low"], leaf["high"] = (min(a, b), max(a, b)) if rnd.random() < 0.9 else (a, b)
    elif op in ("starts_with", "ends_with", "contains"):
        leaf["value"] = rnd.choice(STRING_FRAGMENTS + STRING_VALUES[col][:3])
    elif op == "like":
        leaf["pattern"] = rnd.choice(["v%", "%a%", "_S", "%", "vip", "t_ial", "%e", "C'%", "__", "%r%e%"])
    return leaf


def random_predicate(rnd: random.Random, df: pd.DataFrame, depth: int = 3) -> dict[str, Any]:
    r = rnd.random()
    if depth == 0 or r < 0.35:
        return random_leaf(rnd, df)
    if r < 0.5:
        return {"op": "not", "arg": random_predicate(rnd, df, depth - 1)}
    kind = "and" if r < 0.75 else "or"
    return {"op": kind, "args": [random_predicate(rnd, df, depth - 1) for _ in range(rnd.randint(2, 3))]}


# ---- SQL rendering -------------------------------------------------------------------------------
def sql_literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(v)


def to_sql(p: dict[str, Any]) -> str:
    op = p["op"]
    if op in ("and", "or"):
        return "(" + f" {op.upper()} ".join(to_sql(a) for a in p["args"]) + ")"
    if op == "not":
        return f"(NOT {to_sql(p['arg'])})"
    c = p["column"]
    sym = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    if op in sym:
        return f"{c} {sym[op]} {sql_literal(p['value'])}"
    if op in ("in", "not_in"):
        kw = "IN" if op == "in" else "NOT IN"
        return f"{c} {kw} ({', '.join(sql_literal(v) for v in p['values'])})"
    if op in ("between", "not_between"):
        kw = "BETWEEN" if op == "between" else "NOT BETWEEN"
        return f"{c} {kw} {sql_literal(p['low'])} AND {sql_literal(p['high'])}"
    if op == "is_null":
        return f"{c} IS NULL"
    if op == "is_not_null":
        return f"{c} IS NOT NULL"
    if op in ("starts_with", "ends_with", "contains"):
        return f"{op}({c}, {sql_literal(p['value'])})"
    if op == "like":
        return f"{c} LIKE {sql_literal(p['pattern'])}"
    raise ValueError(op)


# ---- oracle (SQL three-valued logic on pandas) ---------------------------------------------------
def _like_regex(pattern: str) -> re.Pattern[str]:
    out = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return re.compile(out, re.DOTALL)


def oracle(p: dict[str, Any], df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(TRUE mask, UNKNOWN mask) of predicate `p` over `df`'s rows."""
    op = p["op"]
    if op in ("and", "or"):
        parts = [oracle(a, df) for a in p["args"]]
        t, u = parts[0]
        for t2, u2 in parts[1:]:
            if op == "and":
                nt = t & t2
                u = ((t | u) & (t2 | u2)) & ~nt
            else:
                nt = t | t2
                u = (u | u2) & ~nt
            t = nt
        return t, u
    if op == "not":
        t, u = oracle(p["arg"], df)
        return ~t & ~u, u
    col = df[p["column"]]
    null = col.isna().to_numpy()
    vals = col.to_numpy(dtype=object)
    if op == "is_null":
        return null.copy(), np.zeros(len(df), bool)
    if op == "is_not_null":
        return ~null, np.zeros(len(df), bool)

    def test(fn: Any) -> np.ndarray:
        return np.array([False if nl else bool(fn(v)) for v, nl in zip(vals, null, strict=True)])

    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        x = p["value"]
        fn = {"eq": lambda v: v == x, "ne": lambda v: v != x, "lt": lambda v: v < x,
              "le": lambda v: v <= x, "gt": lambda v: v > x, "ge": lambda v: v >= x}[op]
        return test(fn), null.copy()
    if op in ("in", "not_in"):
        lits = [v for v in p["values"] if v is not None]
        has_null = len(lits) != len(p["values"])
        hit = test(lambda v: v in lits)
        if op == "in":
            return hit, (null | (~hit if has_null else np.zeros(len(df), bool))) & ~hit
        miss = ~null & ~hit
        if has_null:  # x NOT IN (..., NULL) is never TRUE: FALSE on a hit, UNKNOWN otherwise
            return np.zeros(len(df), bool), null | miss
        return miss, null.copy()
    if op in ("between", "not_between"):
        lo, hi = p["low"], p["high"]
        inside = test(lambda v: lo <= v <= hi)
        if op == "between":
            return inside, null.copy()
        return ~null & ~inside, null.copy()
    if op == "starts_with":
        return test(lambda v: v.startswith(p["value"])), null.copy()
    if op == "ends_with":
        return test(lambda v: v.endswith(p["value"])), null.copy()
    if op == "contains":
        return test(lambda v: p["value"] in v), null.copy()
    if op == "like":
        rx = _like_regex(p["pattern"])
        return test(lambda v: rx.fullmatch(v) is not None), null.copy()
    raise ValueError(op)


def expected_ids(p: dict[str, Any], df: pd.DataFrame) -> set[int]:
    t, _ = oracle(p, df)
    return set(df.index[t].tolist())
