"""The query plan (predicate.query_plan): made from manifest metadata alone — no index file, sidecar or cache is
touched — it names per leaf the index that answers it, the files left after pruning by first/last keys and null
flags, how each range is read, the leaves declined and why, and the row ranges no index covers. Answers come
from executing the plan; they are judged by a plain-Python reading of the rows."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pytest
from pyroaring import BitMap64

from index_format.btree.btree_writer import write_btree_bytes
from index_format.families import BITMAP, BTREE, MULTIVALUE, IndexFamily
from index_format.global_index.filemeta import parse_meta
from index_format.global_index.multivalue_writer import write_multivalue_bytes
from index_format.global_index.writer import write_index_bytes
from index_format.predicate.answer import ColumnIndex, IndexFileRef, answer_over_files, plan_query
from index_format.predicate.bind import bind
from index_format.predicate.query_plan import QueryPlan
from index_format.predicate.sql import parse_where
from index_format.storage import BytesSource
from index_format.types import KeyType, parse_type

BIGINT, STRING = parse_type("bigint"), parse_type("string")
N = 300
# x: row i holds i // 2 (null every 25th row); b: 'k' + i % 7 over rows 0..199 only; tags: arrays over 0..299
X: list[int | None] = [None if i % 25 == 0 else i // 2 for i in range(N)]
B: list[str | None] = [f"k{i % 7}" for i in range(200)]
TAGS: list[list[int] | None] = [None if i % 40 == 0 else [i % 5, i % 3] for i in range(N)]
TYPES = {"x": BIGINT, "b": STRING, "tags": BIGINT}


class Touched(AssertionError):
    """Planning touched an index file, a sidecar or the reader cache."""


def _never(what: str) -> Callable[..., object]:
    def fail(*_: object) -> object:
        raise Touched(what)
    return fail


def _ref(fam: IndexFamily, kt: KeyType, path: str, start: int, end: int, rows: Sequence[object],
         local: list[int], *, guarded: bool, sidecar: bool = False) -> IndexFileRef:
    """One file of rows `local` (local ids) of the range [start, end]; `guarded`: every hook raises Touched."""
    values = [rows[start + i] for i in local]
    if fam is MULTIVALUE:
        data, written = write_multivalue_bytes(values, local, kt)
    else:
        write = write_btree_bytes if fam is BTREE else write_index_bytes
        data, written = write(values, local, kt)
    opener: Callable[[], object] = _never(f"open {path}") if guarded else (
        lambda: fam.open_reader(BytesSource(data, path), kt))
    hooks = {"open_sidecar": _never(f"sidecar {path}"), "peek_sidecar": _never(f"peek {path}")} if sidecar else {}
    return IndexFileRef(path, start, end, parse_meta(kt, written.meta), len(data), opener,  # type: ignore[arg-type]
                        is_open=_never(f"is_open {path}") if guarded else None, **hooks)  # type: ignore[arg-type]


def _columns(*, guarded: bool, budget: int = 1 << 30, sidecars: bool = False,
             btree_x: bool = False) -> dict[str, ColumnIndex]:
    def r(fam: IndexFamily, kt: KeyType, path: str, start: int, end: int, rows: Sequence[object],
          local: list[int]) -> IndexFileRef:
        return _ref(fam, kt, path, start, end, rows, local, guarded=guarded, sidecar=sidecars and fam is BITMAP)

    # x: three row ranges; the last one in two files split by key (rows 200..249 hold keys 100..124)
    xs = [r(BITMAP, BIGINT, "x0", 0, 99, X, list(range(100))), r(BITMAP, BIGINT, "x1", 100, 199, X, list(range(100))),
          r(BITMAP, BIGINT, "x2a", 200, 299, X, list(range(50))),
          r(BITMAP, BIGINT, "x2b", 200, 299, X, list(range(50, 100)))]
    x = ColumnIndex("x", BIGINT, xs, fallback_scan_max_size=budget, answers=BITMAP.answers, family="bitmap",
                    seeks=BITMAP.seeks, rank=BITMAP.rank)
    if btree_x:
        bt = r(BTREE, BIGINT, "xbt", 0, 299, X, list(range(N)))
        x.alternatives = (ColumnIndex("x", BIGINT, [bt], answers=BTREE.answers, family="btree",
                                      seeks=BTREE.seeks, rank=BTREE.rank),)
    b = ColumnIndex("b", STRING, [r(BTREE, STRING, "b0", 0, 199, B, list(range(200)))], answers=BTREE.answers,
                    family="btree", seeks=BTREE.seeks, rank=BTREE.rank)
    tags = ColumnIndex("tags", BIGINT, [r(MULTIVALUE, BIGINT, "t0", 0, 149, TAGS, list(range(150))),
                                        r(MULTIVALUE, BIGINT, "t1", 150, 299, TAGS, list(range(150)))],
                       answers=MULTIVALUE.answers, family="multivalue", rank=MULTIVALUE.rank)
    return {"x": x, "b": b, "tags": tags}


def _bound(where: str) -> object:
    return bind(parse_where(where), TYPES, arrays={"tags"})


def _plan(where: str, **kw: object) -> QueryPlan:
    plan = plan_query(_bound(where), _columns(guarded=True, **kw), with_unknown=False)  # type: ignore[arg-type]
    json.dumps(plan.to_json())   # JSON-able
    return plan


def _rows(test: Callable[[int], bool | None]) -> list[int]:
    return [i for i in range(N) if test(i)]


@pytest.mark.parametrize("where", [
    "x > 120", "x = 7 OR x IS NULL", "x <> 40", "x IN (1, 2, 130)", "x NOT IN (1, NULL)", "NOT (x BETWEEN 3 AND 60)",
    "b = 'k3' AND x < 90", "b LIKE '%3'", "array_contains(tags, 4)", "NOT array_contains(tags, 4)",
    "arrays_overlap(tags, ARRAY[1, 9]) OR b >= 'k5'", "x > 1 AND x < 5 OR x = 100", "TRUE",
])
def test_planning_reads_no_index_file_sidecar_or_cache(where: str) -> None:
    for kw in ({}, {"sidecars": True}, {"btree_x": True}, {"budget": 1}):
        plan_query(_bound(where), _columns(guarded=True, **kw), with_unknown=False,  # type: ignore[arg-type]
                   count_only=True)
        plan_query(_bound(where), _columns(guarded=True, **kw), explain=True)  # type: ignore[arg-type]


def test_files_are_pruned_by_their_first_and_last_keys() -> None:
    (leaf,) = _plan("x > 124").to_json()["leaves"]  # type: ignore[misc]
    assert leaf["index"] == {"column": "x", "family": "bitmap"} and leaf["declined"] is None
    # x > 124: keys 0..49 (x0), 50..99 (x1) and 100..124 (x2a) cannot hold it; x2b (keys 125..149) may
    assert [(r["range"], r["candidates"], r["pruned"], r["read"]) for r in leaf["ranges"]] == [
        ([0, 99], [], 1, "nothing"), ([100, 199], [], 1, "nothing"), ([200, 299], ["x2b"], 1, "scan")]
    (leaf,) = _plan("x IN (1, 130)").to_json()["leaves"]  # type: ignore[misc]
    assert [r["candidates"] for r in leaf["ranges"]] == [["x0"], [], ["x2b"]]
    assert all(r["budget"] is None and r["read"] in ("index", "nothing") for r in leaf["ranges"])  # a look-up
    # IS NULL: only files with nulls (every file here has some)
    (leaf,) = _plan("x IS NULL").to_json()["leaves"]  # type: ignore[misc]
    assert [r["candidates"] for r in leaf["ranges"]] == [["x0"], ["x1"], ["x2a", "x2b"]]


def test_budget_sidecar_and_index_choice_are_planned() -> None:
    # over budget and no sidecar: the leaf is declined, and the plan says so before reading
    (leaf,) = _plan("x > 120", budget=1).to_json()["leaves"]  # type: ignore[misc]
    assert leaf["declined"] == f"fallback scan of {leaf['ranges'][2]['budget']['selected_bytes']} bytes over budget 1 (spec §6)"
    assert leaf["ranges"][2]["budget"]["decision"] == "unsupported" and leaf["ranges"][2]["read"] == "declined"
    # with sidecars the same leaf is declined only if they are not ready when it runs
    (leaf,) = _plan("x > 120", budget=1, sidecars=True).to_json()["leaves"]  # type: ignore[misc]
    assert leaf["declined"] is None and leaf["declined_unless_sidecars"].startswith("fallback scan of")
    assert leaf["ranges"][2]["read"] == "sidecars, else declined"
    # a btree beside the bitmap: the range seeks in it (no budget), the point stays on the bitmap (rank)
    (ranged,) = _plan("x > 120", budget=1, btree_x=True).to_json()["leaves"]  # type: ignore[misc]
    (point,) = _plan("x = 3", budget=1, btree_x=True).to_json()["leaves"]  # type: ignore[misc]
    assert ranged["index"]["family"] == "btree" and ranged["declined"] is None
    assert [c["family"] for c in ranged["considered"]] == ["bitmap", "btree"]
    assert ranged["ranges"] == [{"range": [0, 299], "files": 1, "candidates": ["xbt"], "pruned": 0, "read": "index",
                                 "budget": None}]
    assert point["index"]["family"] == "bitmap"


def test_declined_leaves_say_why() -> None:
    plan = _plan("b LIKE '%3' OR NOT array_contains(tags, 4)").to_json()
    like, negated = plan["leaves"]  # type: ignore[misc]
    assert like["index"] is None and like["declined"] == "the btree index of 'b' does not answer ends_with"
    assert negated["leaf"].startswith("NOT ") and "array index cannot tell a null array" in negated["declined"]
    got = answer_over_files(_bound("b LIKE '%3'"), _columns(guarded=False), with_unknown=False)  # type: ignore[arg-type]
    assert (got.supported, got.explain["unsupported"]) == (False, [like["declined"]])


def test_coverage_names_the_rows_no_index_covers() -> None:
    bound = _bound("b = 'k3' AND x < 90")
    plan = plan_query(bound, _columns(guarded=True), with_unknown=False, table_ranges=[(0, 399)])  # type: ignore[arg-type]
    cov = plan.to_json()["coverage"]
    assert cov == {"indexes": [{"column": "b", "family": "btree"}, {"column": "x", "family": "bitmap"}],
                   "covered": [[0, 199]], "partly_covered": [[200, 299]], "uncovered": [[200, 399]]}
    # x's leaf is UNKNOWN nowhere (it covers every row b does); b's is UNKNOWN over x's last range
    b_leaf, x_leaf = plan.to_json()["leaves"]  # type: ignore[misc]
    assert (b_leaf["unknown_outside"], x_leaf["unknown_outside"]) == ([[200, 299]], [])
    got = answer_over_files(bound, _columns(guarded=False), with_unknown=False)  # type: ignore[arg-type]
    assert [tuple(r) for r in got.coverage_ranges] == [(0, 199)] and got.uncovered_ranges == [(200, 299)]
    assert sorted(got.rows) == _rows(lambda i: i < 200 and B[i] == "k3" and X[i] is not None and X[i] < 90)


@pytest.mark.parametrize(("where", "truth"), [
    ("x > 120", lambda i: X[i] is not None and X[i] > 120),
    ("x <> 40", lambda i: X[i] is not None and X[i] != 40),
    ("x IN (1, 2, 130) OR b = 'k0'", lambda i: X[i] in (1, 2, 130) or (i < 200 and B[i] == "k0")),
    ("NOT (x BETWEEN 3 AND 60)", lambda i: X[i] is not None and not 3 <= X[i] <= 60),
    ("array_contains(tags, 4) AND x < 100", lambda i: TAGS[i] is not None and 4 in TAGS[i]
     and X[i] is not None and X[i] < 100),
])
@pytest.mark.parametrize("kw", [{}, {"sidecars": False, "btree_x": True}])
def test_executing_the_plan_answers_as_the_rows_say_and_explain_shows_it(where: str, truth: Callable[[int], bool],
                                                                           kw: dict[str, bool]) -> None:
    columns = _columns(guarded=False, **kw)
    got = answer_over_files(_bound(where), columns, with_unknown=False, explain=True)  # type: ignore[arg-type]
    assert got.supported and sorted(got.rows) == _rows(truth)
    plan = plan_query(_bound(where), _columns(guarded=True, **kw), with_unknown=False, explain=True)  # type: ignore[arg-type]
    assert got.explain["plan"] == plan.to_json()
    # explain's earlier keys are all still there
    assert {"files_considered", "files_pruned", "files_read", "files_cached", "sidecars_used", "reads",
            "bytes_read", "blocks_decoded", "bitmaps_read", "from_cache", "fallback_scan", "budget_decisions",
            "unsupported", "dropped_and_children", "leaves"} <= set(got.explain)


def test_the_count_only_decision_is_planned() -> None:
    def count(where: str, **kw: object) -> dict[str, object]:
        plan = plan_query(_bound(where), _columns(guarded=True, **kw), with_unknown=False,  # type: ignore[arg-type]
                          count_only=True)
        assert plan.count is not None
        return plan.count.to_json()

    assert count("b >= 'k2'") == {"tried": True, "reason": None, "via": "index"}   # a btree counts its entries
    assert count("x > 10") == {"tried": False, "reason": "several files in one row range", "via": None}
    assert count("x > 10 AND b = 'k1'")["reason"] == "not a single leaf"
    assert count("b LIKE '%1'")["reason"] == "the leaf is declined"
    assert plan_query(_bound("b = 'k1'"), _columns(guarded=True)).count is None   # type: ignore[arg-type]
    columns = _columns(guarded=False)
    got = answer_over_files(_bound("b >= 'k2'"), columns, with_unknown=False, count_only=True)  # type: ignore[arg-type]
    assert got.count == len(_rows(lambda i: i < 200 and B[i] >= "k2")) and len(got.rows) == 0
    assert BitMap64() == got.rows
