"""Dashboard facets in headless Chromium: per-value bar charts of the answered query's rows, a click on a bar adds
its value to the filter, the top-groups table, exactness and errors.

Expected figures come from pandas over the Parquet source rows (the filter evaluated by pandas, NULL a group, an
ARRAY column's distinct non-null elements its groups). Never from bgix's own output.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.api.helpers import wait_job
from tests.browser.conftest import Service

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STATUSES = ["ok", "error", "timeout", "it's odd", ""]
COUNTRIES = ["US", "DE", "FR", "JP", "BR"]
TAGS = ["vip", "trial", "churned", "beta"]
INDEXES = {"uid": "btree", "status": "bitmap", "country": "btree", "score": "bitmap", "tags": "multivalue",
           "big": "bitmap"}
BIGS = [2**53 + 1, 2**53 + 3, 2**53 + 5, 2**62 + 7, -(2**60) - 1]   # no double holds them: JSON.parse would round
FILES, PER_FILE = 3, 700


def _frame(rng: np.random.Generator, n: int, first: int) -> pd.DataFrame:
    def pick(values: list[Any], p: list[float], null_rate: float) -> list[Any]:
        idx = rng.choice(len(values), size=n, p=p)
        return [None if rng.random() < null_rate else values[i] for i in idx]

    def tags() -> list[list[str] | None]:
        out: list[list[str] | None] = []
        for _ in range(n):
            r = rng.random()
            out.append(None if r < 0.08 else [] if r < 0.15 else
                       [TAGS[int(i)] for i in rng.choice(4, size=int(rng.integers(1, 4)), p=[.1, .4, .2, .3])])
        return out

    return pd.DataFrame({
        "uid": np.arange(first, first + n, dtype=np.int64),
        "status": pick(STATUSES, [.5, .2, .15, .1, .05], 0.08),
        "country": pick(COUNTRIES, [.35, .25, .2, .12, .08], 0.06),
        "score": pd.array(pick(list(range(-5, 41)), [1 / 46] * 46, 0.07), dtype="Int64"),
        "tags": tags(),
        "big": pd.array(pick(BIGS, [.3, .25, .2, .15, .1], 0.05), dtype="Int64"),   # exact: never via float
    })


def _arrow(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False).cast(pa.schema([
        ("uid", pa.int64()), ("status", pa.string()), ("country", pa.string()), ("score", pa.int64()),
        ("tags", pa.list_(pa.string())), ("big", pa.int64())]))


def _build(http: Any, table: str, column: str, index_type: str) -> None:
    job = http.post("/v1/create_global_index", json={"table": table, "index_column": column,
                                                      "index_type": index_type}).raise_for_status().json()["job_id"]
    assert wait_job(http, job)["state"] == "succeeded"


@pytest.fixture(scope="module")
def facets_service(start_service: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, pd.DataFrame]]:
    """Table `t`: every column indexed (row ids = positions, files in name order). Table `late`: `status` indexed,
    then a file appended that no index covers, past the scan budget: its aggregates are not exact."""
    root = tmp_path_factory.mktemp("facets")
    rng = np.random.default_rng(20261130)
    data, late = root / "data" / "t", root / "data" / "late"
    data.mkdir(parents=True)
    late.mkdir(parents=True)
    frames = [_frame(rng, PER_FILE, i * PER_FILE) for i in range(FILES)]
    for i, f in enumerate(frames):
        pq.write_table(_arrow(f), data / f"part-{i:03d}.parquet")
    pq.write_table(_arrow(_frame(rng, 400, 0)), late / "part-000.parquet")
    with start_service(root / "wh", query_scan_max_rows="100") as (url, http):
        http.put("/v1/tables/t", json={"location": str(data), "format": "parquet"}).raise_for_status()
        http.put("/v1/tables/late", json={"location": str(late), "format": "parquet"}).raise_for_status()
        for column, index_type in INDEXES.items():
            _build(http, "t", column, index_type)
        _build(http, "late", "status", "bitmap")
        pq.write_table(_arrow(_frame(rng, 300, 400)), late / "part-001.parquet")
        http.get("/v1/tables/late/files", params={"refresh": True}).raise_for_status()
        yield url, pd.concat(frames, ignore_index=True)


@pytest.fixture()
def fpage(browser: Any, facets_service: tuple[str, pd.DataFrame]) -> Iterator[Any]:
    url, _ = facets_service
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{url}/dashboard")
    page.locator("#facet-columns .facet-pick[data-column=status]").wait_for()
    try:
        yield page
    finally:
        context.close()


# ---- the judge: pandas over the source rows --------------------------------------------------------------
def _value_counts(df: pd.DataFrame, column: str) -> dict[str, int]:
    """Rows per value as the page labels them (NULL: "NULL"); an ARRAY column: rows holding each element."""
    if column == "tags":
        return dict(Counter(t for a in df.tags if a is not None for t in set(a)))
    if column == "big":   # exact integers (Int64, never rounded through a float)
        return dict(Counter("NULL" if pd.isna(v) else str(int(v)) for v in df.big))
    counts = df[column].value_counts(dropna=False)
    return {("NULL" if pd.isna(k) else str(k)): int(v) for k, v in counts.items()}


def _bars(page: Any, column: str) -> list[tuple[str, int]]:
    bars = page.locator(f"#facets .facet[data-column={column}] svg .chart-row")
    return [(bars.nth(i).get_attribute("data-value"), int(bars.nth(i).get_attribute("data-rows")))
            for i in range(bars.count())]


def _scope(where: str, table: str = "t") -> str:
    return f"of {table} where {where}" if where else f"of every row of {table}"


def _run(page: Any, where: str) -> None:
    page.fill("#query-where", where)
    page.click("#query-run")
    page.locator("#query-result").wait_for(state="visible")
    page.wait_for_function("s => document.getElementById('facets-scope').textContent === s", arg=_scope(where))


def _pick(page: Any, *columns: str, state: str = "done") -> None:
    for c in columns:
        page.locator(f"#facet-columns .facet-pick[data-column={c}] input").check()
    for c in columns:
        page.locator(f"#facets .facet[data-column={c}][data-state={state}]").wait_for()


def _settled(page: Any, column: str, where: str) -> None:
    """The facet of `column` answered for `where` (its card redrawn after the scope changed)."""
    page.wait_for_function(
        "([c, s]) => document.getElementById('facets-scope').textContent === s"
        " && document.querySelector(`#facets .facet[data-column=${c}]`).dataset.state === 'done'",
        arg=[column, _scope(where)])


def test_facets_count_the_query_rows_per_value(fpage: Any, facets_service: tuple[str, pd.DataFrame]) -> None:
    page, df = fpage, facets_service[1]
    page.select_option("#query-table", "t")
    where = "country IN ('US', 'DE') AND NOT status = 'timeout'"
    _run(page, where)
    rows = df[df.country.isin(["US", "DE"]) & df.status.notna() & (df.status != "timeout")]
    _pick(page, "status", "tags", "uid", "score")
    for column in ("status", "tags"):
        got = _bars(page, column)
        assert dict(got) == _value_counts(rows, column), column
        assert [n for _, n in got] == sorted((n for _, n in got), reverse=True)
        card = page.locator(f"#facets .facet[data-column={column}]")
        assert card.get_attribute("data-exact") == "true"
        assert card.locator(".agg-exact").inner_text() == "exact"
    assert page.locator("#facets .facet[data-column=status] svg .chart-row[data-null=true]").count() == 0
    # an id column: every count is 1, so a note instead of a wall of equal bars
    uid = page.locator("#facets .facet[data-column=uid]")
    assert uid.get_attribute("data-unique") == "true"
    assert uid.locator("svg").count() == 0
    assert f"{len(rows):,} distinct values, one row each" in uid.inner_text()
    # 46 score values: 20 bars, then "more" pages on to every value
    score = page.locator("#facets .facet[data-column=score]")
    expected = _value_counts(rows, "score")
    assert len(_bars(page, "score")) == 20
    assert f"20 of {len(expected)} values shown" in score.locator(".facet-foot").inner_text()
    while score.locator(".facet-more").count():
        shown = len(_bars(page, "score"))
        score.locator(".facet-more").click()
        page.wait_for_function("([n]) => document.querySelectorAll("
                               "'#facets .facet[data-column=score] svg .chart-row').length > n", arg=[shown])
    got = _bars(page, "score")
    assert dict(got) == expected
    assert [n for _, n in got] == sorted(expected.values(), reverse=True)
    assert f"all {len(expected)} values" in score.locator(".facet-foot").inner_text()


def test_a_click_on_a_bar_adds_its_value_to_the_filter(fpage: Any, facets_service: tuple[str, pd.DataFrame]) -> None:
    page, df = fpage, facets_service[1]
    page.select_option("#query-table", "t")
    where = "status = 'ok' OR status = 'error'"
    _run(page, where)
    _pick(page, "status", "country", "tags")
    mask = df.status.isin(["ok", "error"])
    # a NULL bar: labelled, and a click adds IS NULL (the OR bracketed first)
    null_bar = page.locator("#facets .facet[data-column=country] svg .chart-row[data-null=true]")
    assert null_bar.locator("text").first.text_content() == "NULL"
    null_bar.click()
    where = "(status = 'ok' OR status = 'error') AND country IS NULL"
    _settled(page, "tags", where)
    assert page.locator("#query-where").input_value() == where
    mask &= df.country.isna()
    assert int(page.locator("#query-count").get_attribute("data-count")) == int(mask.sum())
    assert dict(_bars(page, "tags")) == _value_counts(df[mask], "tags")
    # a string with a quote: escaped as the query box wants it
    _run(page, "country = 'FR'")
    page.locator("#facets .facet[data-column=status] svg .chart-row[data-value=\"it's odd\"]").click()
    where = "country = 'FR' AND status = 'it''s odd'"
    _settled(page, "tags", where)
    assert page.locator("#query-where").input_value() == where
    mask = (df.country == "FR") & (df.status == "it's odd")
    assert int(page.locator("#query-count").get_attribute("data-count")) == int(mask.sum())
    # an array element: array_contains, ANDed onto the filter
    page.locator("#facets .facet[data-column=tags] svg .chart-row[data-value=vip]").click()
    where = "country = 'FR' AND status = 'it''s odd' AND array_contains(tags, 'vip')"
    _settled(page, "country", where)
    mask &= df.tags.map(lambda a: a is not None and "vip" in a)
    assert int(page.locator("#query-count").get_attribute("data-count")) == int(mask.sum())
    assert dict(_bars(page, "country")) == _value_counts(df[mask], "country")
    assert dict(_bars(page, "status")) == {"it's odd": int(mask.sum())}
    assert page.locator("#facets .facet[data-column=status] .facet-foot").inner_text() == "the only value"


def _topn(page: Any, col1: str, col2: str, metric: str, limit: int, order: str = "desc") -> list[tuple[list[Any], int, Any]]:
    page.select_option("#topn-col1", col1)
    page.select_option("#topn-col2", col2)
    page.select_option("#topn-metric", metric)
    page.select_option("#topn-order", order)
    page.fill("#topn-limit", str(limit))
    page.evaluate("document.getElementById('topn-result').replaceChildren()")
    page.click("#topn-run")
    page.locator("#topn-result .topn").wait_for()
    out = []
    for tr in page.locator("#topn-result tbody tr[data-key]").all():
        value = tr.locator("td[data-metric]:not([data-metric=count])")
        out.append((json.loads(tr.get_attribute("data-key")),
                    int(tr.locator("td[data-metric=count]").get_attribute("data-value")),
                    json.loads(value.get_attribute("data-value")) if value.count() else None))
    return out


def _key(v: Any) -> Any:
    return None if pd.isna(v) else v


def test_top_groups_table(fpage: Any, facets_service: tuple[str, pd.DataFrame]) -> None:
    page, df = fpage, facets_service[1]
    page.select_option("#query-table", "t")
    where = "array_contains(tags, 'beta') OR country = 'JP'"
    _run(page, where)
    rows = df[df.tags.map(lambda a: a is not None and "beta" in a) | (df.country == "JP")]
    # two group columns, counts, largest first
    got = _topn(page, "status", "country", "count", 8)
    sizes = rows.groupby(["status", "country"], dropna=False).size()
    truth = {(_key(s), _key(c)): int(n) for (s, c), n in sizes.items()}
    assert [n for _, n, _ in got] == sorted(truth.values(), reverse=True)[:8]
    assert all(truth[tuple(k)] == n for k, n, _ in got)
    head = page.locator("#topn-result .topn-head").inner_text()
    assert f"8 of {len(truth)} groups" in head and f"{len(rows):,} rows" in head
    assert page.locator("#topn-result .topn").get_attribute("data-exact") == "true"
    _pick(page, "country", "tags", "uid")   # the docs' picture: a NULL bar, array elements, an id column's note
    page.mouse.move(0, 0)
    Service.screenshot_of(page.locator("#facets-section"), "dashboard-facets")
    # sum and avg of a numeric column, by one group column
    by_country = rows.groupby("country", dropna=False).score
    for op, truth_of in (("sum", lambda g: int(g.sum()) if g.notna().any() else None),
                         ("avg", lambda g: float(g.mean()) if g.notna().any() else None)):
        got = _topn(page, "country", "", f"{op}:score", 3)
        want = {_key(k): truth_of(g) for k, g in by_country}
        assert [k[0] for k, _, _ in got] == sorted(want, key=lambda k: -want[k])[:3]
        for (k,), n, v in got:
            assert n == int((rows.country.isna() if k is None else rows.country == k).sum())
            assert math.isclose(v, want[k], rel_tol=1e-9), (op, k)


def test_an_inexact_aggregate_says_so(fpage: Any) -> None:
    page = fpage
    # NOT array_contains is read from the data (the index cannot tell a null array), past the budget: declined
    page.select_option("#query-table", "t")
    _run(page, "NOT array_contains(tags, 'trial')")
    _pick(page, "status")
    card = page.locator("#facets .facet[data-column=status]")
    assert card.get_attribute("data-exact") == "false"
    assert card.locator(".agg-exact").inner_text().startswith("not answered: the indexes declined")
    assert page.locator("#query-count").inner_text() == "not answered"
    page.select_option("#query-table", "late")   # 300 rows no index covers, past the scan budget of 100
    page.locator("#facet-columns .facet-pick[data-column=status]").wait_for()
    _pick(page, "status")
    card = page.locator("#facets .facet[data-column=status]")
    assert card.get_attribute("data-exact") == "false"
    assert card.locator(".agg-exact").inner_text() == "not exact: 300 rows no index covers are not counted"
    assert card.locator("svg .chart-row.inexact").count() == card.locator("svg .chart-row").count() > 0
    _topn(page, "status", "", "count", 5)
    assert page.locator("#topn-result .topn").get_attribute("data-exact") == "false"
    assert "not exact" in page.locator("#topn-result .agg-exact").inner_text()


def test_aggregate_errors_are_shown_in_words(fpage: Any) -> None:
    page = fpage
    message = "grouping by score gives more than 100000 groups (the aggregate groups cap); narrow `where`"

    def refuse(route: Any) -> None:
        route.fulfill(status=400, json={"error": {"code": "too_many_groups", "message": message, "details": {}}})

    page.select_option("#query-table", "t")
    page.route("**/v1/tables/t/aggregate", refuse)
    _pick(page, "score", state="error")
    card = page.locator("#facets .facet[data-column=score]")
    assert card.get_attribute("data-state") == "error"
    assert card.locator(".facet-error").inner_text() == f"too_many_groups: {message}"
    assert card.locator("svg").count() == 0
    page.click("#topn-run")
    page.locator("#topn-error").wait_for(state="visible")
    assert page.locator("#topn-error").inner_text() == f"too_many_groups: {message}"
    assert page.locator("#topn-result").inner_text() == ""


def test_bigint_keys_past_2_53_keep_every_digit(fpage: Any, facets_service: tuple[str, pd.DataFrame]) -> None:
    """BIGINT keys no double holds: the bars name them digit for digit, and a click filters on that very key (a
    rounded one would select another key's rows, or none, silently)."""
    page, df = fpage, facets_service[1]
    page.select_option("#query-table", "t")
    _run(page, "score > 10")
    rows = df[(df.score > 10).fillna(False)]
    _pick(page, "big")
    got = _bars(page, "big")
    assert dict(got) == _value_counts(rows, "big")
    assert {v for v, _ in got} >= {str(2**53 + 1), str(2**53 + 3)}
    bar = page.locator(f"#facets .facet[data-column=big] svg .chart-row[data-value='{2**53 + 3}']")
    bar.click()
    where = f"score > 10 AND big = {2**53 + 3}"
    _settled(page, "big", where)
    assert page.locator("#query-where").input_value() == where
    want = int(((df.score > 10) & (df.big == 2**53 + 3)).fillna(False).sum())
    assert want > 0 and int(page.locator("#query-count").get_attribute("data-count")) == want
    assert _bars(page, "big") == [(str(2**53 + 3), want)]
