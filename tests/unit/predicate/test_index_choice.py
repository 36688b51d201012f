"""Several indexes on one column (a bitmap and a btree): each leaf is answered by the index covering most rows,
then by one that seeks rather than scans for it; coverage is that of the indexes that answered. The judge is a
plain-Python reading of the values."""
from __future__ import annotations

import random

from pyroaring import BitMap64

from index_format.btree.btree_writer import write_btree_bytes
from index_format.families import BITMAP, BTREE
from index_format.global_index.filemeta import parse_meta
from index_format.global_index.writer import write_index_bytes
from index_format.predicate.answer import ColumnIndex, IndexFileRef, answer_over_files
from index_format.predicate.bind import bind
from index_format.predicate.sql import parse_where
from index_format.storage import BytesSource
from index_format.types import parse_type

KT = parse_type("bigint")
rng = random.Random(3)
VALUES = [None if rng.random() < 0.1 else rng.randint(-50, 50) for _ in range(400)]


def _index(fam: str, ranges: list[tuple[int, int]], budget: int = 1 << 30) -> ColumnIndex:
    write = write_index_bytes if fam == "bitmap" else write_btree_bytes
    family = BITMAP if fam == "bitmap" else BTREE
    refs = []
    for start, end in ranges:
        data, written = write(VALUES[start:end + 1], list(range(end - start + 1)), KT)
        refs.append(IndexFileRef(f"{fam}-{start}", start, end, parse_meta(KT, written.meta), len(data),
                                 lambda data=data: family.open_reader(BytesSource(data), KT)))
    return ColumnIndex("x", KT, refs, fallback_scan_max_size=budget, answers=family.answers, family=family.name,
                       seeks=family.seeks, rank=family.rank)


def _with(main: ColumnIndex, *more: ColumnIndex) -> ColumnIndex:
    main.alternatives = more
    return main


def _ask(where: str, index: ColumnIndex) -> tuple[list[int], bool, list[tuple[int, int]], list[str]]:
    got = answer_over_files(bind(parse_where(where), {"x": KT}), {"x": index}, explain=True)
    return (sorted(got.rows), got.exact, [tuple(r) for r in got.coverage_ranges],
            [leaf["index"] for leaf in got.explain["leaves"]])  # type: ignore[index, union-attr]


def _truth(test: object, upto: int = len(VALUES)) -> list[int]:
    return [i for i, v in enumerate(VALUES[:upto]) if v is not None and test(v)]  # type: ignore[operator]


def test_a_range_seeks_in_the_btree_and_a_point_stays_on_the_bitmap_under_a_zero_budget() -> None:
    both = _with(_index("bitmap", [(0, 199), (200, 399)], budget=0), _index("btree", [(0, 399)], budget=0))
    rows, exact, covered, used = _ask("x > 10", both)
    assert (rows, exact, covered, used) == (_truth(lambda v: v > 10), True, [(0, 399)], ["btree"])
    rows, exact, _, used = _ask("x = 7 OR x IS NULL", both)
    assert (rows, exact) == (sorted(_truth(lambda v: v == 7) + [i for i, v in enumerate(VALUES) if v is None]), True)
    assert used == ["bitmap", "bitmap"]
    # the bitmap alone declines the range under a zero budget: nothing is answered wrong, it says so
    rows, exact, _, _ = _ask("x > 10", _index("bitmap", [(0, 399)], budget=0))
    assert (rows, exact) == ([], False)


def test_the_index_covering_more_rows_answers_and_coverage_is_the_one_used() -> None:
    # the btree covers only the first 200 rows: the bitmap (all 400) answers even a range, by scanning
    both = _with(_index("btree", [(0, 199)]), _index("bitmap", [(0, 399)]))
    rows, exact, covered, used = _ask("x BETWEEN -5 AND 5", both)
    assert (rows, exact, covered, used) == (_truth(lambda v: -5 <= v <= 5), True, [(0, 399)], ["bitmap"])
    # a leaf only the smaller index answers (a bitmap that answers nothing) is UNKNOWN beyond its coverage
    narrow = _index("bitmap", [(0, 399)])
    narrow.answers = frozenset()
    only_btree = _with(narrow, _index("btree", [(0, 199)]))
    rows, exact, covered, used = _ask("x < 0", only_btree)
    assert (rows, covered, used) == (_truth(lambda v: v < 0, 200), [(0, 199)], ["btree"])
    assert BitMap64(rows).issubset(BitMap64(range(200)))


def test_a_btree_counts_a_leaf_from_its_entries() -> None:
    """`result: count` on a btree leaf sums the entries' row counts; the count equals the rows the full
    evaluation finds (and the plain-Python truth)."""
    index = _index("btree", [(0, 199), (200, 399)])
    for where, test in (("x > 10", lambda v: v > 10), ("x BETWEEN -5 AND 5", lambda v: -5 <= v <= 5),
                        ("x = 7", lambda v: v == 7), ("x IN (1, 2, 3)", lambda v: v in (1, 2, 3)),
                        ("x <> 7", lambda v: v != 7), ("x NOT BETWEEN -5 AND 5", lambda v: not -5 <= v <= 5)):
        got = answer_over_files(bind(parse_where(where), {"x": KT}), {"x": index}, count_only=True,
                                with_unknown=False)
        assert got.count == len(_truth(test)), where
