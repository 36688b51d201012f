"""Index families on the dashboard: each index's family badge, keyed by (column, family); a multivalue column's top
elements and its array_contains look-up; the btree range look-up.

pypaimon-rust makes the tables and builds every index (`CALL sys.create_global_index`); expected figures come from
its read of the rows, counted in plain Python. Never from bgix's own output.
"""
from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.browser.conftest import Service
from tests.unit.tables.paimon import rust_tables as rt

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TAGS = ["vip", "vintage", "trial", "churned", "ü"]
NAMES = ["alpha", "beta", "gamma", "delta"]


def _table(wh: Path, name: str, indexes: list[tuple[str, str]], rows: int = 600) -> tuple[Path, list[dict[str, Any]]]:
    location = rt.create_table(wh, name, "id BIGINT, uid BIGINT, name STRING, tags ARRAY<STRING>, nums ARRAY<BIGINT>")
    rng = random.Random(17)

    def tags() -> list[str | None] | None:
        r = rng.random()
        if r < 0.1:
            return None
        return [] if r < 0.2 else [rng.choice(TAGS) for _ in range(rng.randint(1, 3))]  # duplicates inside a row

    rt.append(wh, name, pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "uid": pa.array([None if rng.random() < 0.05 else rng.randint(0, 1000) for _ in range(rows)], pa.int64()),
        "name": pa.array([None if rng.random() < 0.1 else rng.choice(NAMES) for _ in range(rows)], pa.string()),
        "tags": pa.array([tags() for _ in range(rows)], pa.list_(pa.string())),
        "nums": pa.array([[rng.choice([-3, 0, 7, 2**40]) for _ in range(rng.randint(0, 2))] for _ in range(rows)],
                         pa.list_(pa.int64())),
    }))
    for column, index_type in indexes:
        rt.create_index(wh, name, column, index_type)
    return location, rt.read_rows(wh, name, ["uid", "name", "tags", "nums"])


def _int(text: str) -> int:
    return int(re.sub(r"[^\d]", "", text))


def _open(browser: Any, url: str, table: str) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{url}/dashboard")
    page.locator(f"#tables .table-card[data-table={table}] tr[data-column]").first.wait_for()
    return context, page


def test_multivalue_top_elements_and_array_contains_look_up(browser, start_service, tmp_path) -> None:
    wh = tmp_path / "wh"
    location, rows = _table(wh / "source", "mv", [("name", "bitmap"), ("tags", "multivalue"), ("nums", "multivalue")])
    # rows whose array holds each element (a row counts once however often the element repeats in it)
    holding = Counter(t for r in rows if r["tags"] for t in set(r["tags"]) if t is not None)
    with start_service(wh) as (url, http):
        http.put("/v1/tables/mv", json={"format": "paimon", "location": str(location)}).raise_for_status()
        context, page = _open(browser, url, "mv")
        try:
            card = page.locator("#tables .table-card[data-table=mv]")
            tags, name = card.locator("tr[data-column=tags]"), card.locator("tr[data-column=name]")
            assert tags.get_attribute("data-family") == "multivalue"
            assert name.get_attribute("data-family") == "bitmap"
            assert tags.locator(".badge.family").inner_text() == "multivalue"
            assert "array_contains" in tags.locator(".badge.family").get_attribute("title")
            assert tags.locator("td.index-type").inner_text() == "multivalue · array<string>"
            assert name.locator("td.index-type").inner_text() == "bitmap · string"
            assert _int(tags.locator("td").nth(5).inner_text()) == len(holding)   # distinct elements
            null_arrays = sum(1 for r in rows if r["tags"] is None)
            assert null_arrays and _int(tags.locator("td").nth(6).inner_text()) == null_arrays   # Nulls: NULL arrays

            tags.locator(".explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            assert page.locator("#top-title").inner_text().lower() == "top tags (array elements) by rows"
            assert page.locator("#explore-family .badge").inner_text() == "multivalue"
            assert page.locator("#range-box").is_hidden()   # ranges are offered for btree indexes
            bars = page.locator("#top-chart svg .chart-row")
            got = {bars.nth(i).get_attribute("data-value"): int(bars.nth(i).get_attribute("data-rows"))
                   for i in range(bars.count())}
            assert got == {**holding, "NULL": null_arrays}   # NULL ranked with the elements: the NULL arrays

            page.locator("#value-input").press_sequentially("vi", delay=30)
            page.wait_for_function(
                "() => { const li = document.querySelectorAll('#suggestions li[data-value]');"
                " return li.length > 0 && [...li].every(x => x.dataset.value.startsWith('vi')); }")
            items = page.locator("#suggestions li[data-value]")
            assert [items.nth(i).get_attribute("data-value") for i in range(items.count())] == ["vintage", "vip"]
            page.locator("#suggestions li[data-value=vip]").dispatch_event("mousedown")
            result = page.locator("#value-result")
            assert f"{holding['vip']:,} rows whose array holds it" in result.inner_text()
            assert result.locator("a.prefill").get_attribute("data-where") == "array_contains(tags, 'vip')"
            result.locator("a.prefill").click()
            assert page.locator("#query-where").input_value() == "array_contains(tags, 'vip')"

            # the build form: the family's purpose beside the select; multivalue offers the ARRAY fields only
            page.select_option("#build-table", "mv")
            page.select_option("#build-type", "multivalue")
            assert "array_contains" in page.locator("#build-type-hint").inner_text()
            options = page.locator("#build-columns option")
            assert [options.nth(i).get_attribute("value") for i in range(options.count())] == ["tags", "nums"]
            page.select_option("#build-type", "btree")
            assert "high-cardinality" in page.locator("#build-type-hint").inner_text()
            assert [options.nth(i).get_attribute("value") for i in range(options.count())] == ["id", "uid", "name"]
            page.select_option("#build-type", "fm")   # its key_types: STRING fields only
            assert [options.nth(i).get_attribute("value") for i in range(options.count())] == ["name"]
        finally:
            context.close()


def test_two_families_on_one_column_and_the_btree_range_look_up(browser, start_service, tmp_path) -> None:
    wh = tmp_path / "wh"
    location, rows = _table(wh / "source", "bt", [("uid", "btree"), ("name", "bitmap"), ("name", "btree"),
                                                  ("tags", "multivalue"), ("id", "btree")])
    names = [r["name"] for r in rows]
    ids = [r["id"] for r in rt.read_rows(wh / "source", "bt", ["id"])]
    with start_service(wh) as (url, http):
        http.put("/v1/tables/bt", json={"format": "paimon", "location": str(location)}).raise_for_status()
        context, page = _open(browser, url, "bt")
        try:
            card = page.locator("#tables .table-card[data-table=bt]")
            assert card.locator("tr[data-column=name]").count() == 2   # one row per (column, family)
            for family in ("bitmap", "btree"):
                row = card.locator(f"tr[data-column=name][data-family={family}]")
                assert row.locator(".badge.family").inner_text() == family
                cells = row.locator("td").all_inner_texts()
                # Column | Type | _ROW_IDs | Files | Size | Distinct | Nulls | Coverage | Origin | Row ranges
                assert cells[1] == f"{family} · string"
                assert _int(cells[2]) == len(rows)
                assert _int(cells[5]) == len({n for n in names if n is not None})
                assert _int(cells[6]) == names.count(None)
            uid = card.locator("tr[data-column=uid]")
            assert uid.get_attribute("data-family") == "btree"
            assert "high-cardinality" in uid.locator(".badge.family").get_attribute("title")

            # the bitmap row's explorer has no range form; the btree row's has one
            card.locator("tr[data-column=name][data-family=bitmap] .explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            assert page.locator("#range-box").is_hidden()
            uid.locator(".explore-btn").click()
            page.locator("#range-box").wait_for(state="visible")
            assert page.locator("#explore-family .badge").inner_text() == "btree"
            uids = [r["uid"] for r in rows if r["uid"] is not None]
            for low, high, where in (("100", "300", "uid BETWEEN 100 AND 300"), ("900", "", "uid >= 900"),
                                     ("", "5", "uid <= 5")):
                page.fill("#range-low", low)
                page.fill("#range-high", high)
                page.click("#range-run")
                page.locator(f"#range-result a.prefill[data-where='{where}']").wait_for()
                expected = sum(1 for u in uids if (not low or u >= int(low)) and (not high or u <= int(high)))
                assert int(page.locator("#range-result").get_attribute("data-count")) == expected, where
            Service.screenshot(page, "dashboard-families")
            # "query these rows" puts the range into the query box, which answers the same rows
            page.locator("#range-result a.prefill").click()
            assert page.locator("#query-where").input_value() == "uid <= 5"
            page.click("#query-run")
            page.locator("#query-result").wait_for(state="visible")
            assert int(page.locator("#query-count").get_attribute("data-count")) == sum(1 for u in uids if u <= 5)

            # a unique column (every key one row): not a wall of equal bars, a note saying the values are distinct
            assert len(set(ids)) == len(ids) == len(rows)
            card.locator("tr[data-column=id] .explore-btn").click()
            note = page.locator("#top-chart .distinct-note")
            note.wait_for()
            assert note.inner_text() == f"all {len(ids):,} values are distinct (1 row each): no top values to chart."
            assert page.locator("#top-chart svg").count() == 0
            # a column with repeated values still gets its chart
            uid.locator(".explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            assert page.locator("#top-chart .distinct-note").count() == 0
        finally:
            context.close()


def test_array_contains_look_ups_answer_through_the_query_api(browser, start_service, tmp_path) -> None:
    wh = tmp_path / "wh"
    location, rows = _table(wh / "source", "mv", [("tags", "multivalue"), ("nums", "multivalue")])
    with start_service(wh) as (url, http):
        http.put("/v1/tables/mv", json={"format": "paimon", "location": str(location)}).raise_for_status()
        context, page = _open(browser, url, "mv")
        try:
            card = page.locator("#tables .table-card[data-table=mv]")
            card.locator("tr[data-column=tags] .explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            page.locator("#value-input").press_sequentially("vip", delay=30)
            page.locator("#suggestions li[data-value=vip]").dispatch_event("mousedown")
            page.locator("#value-result a.prefill").click()
            page.click("#query-run")   # the prefilled query answers the rows whose array holds 'vip'
            page.locator("#query-result:not([hidden]), #query-error:not([hidden])").first.wait_for()
            assert page.locator("#query-error").is_hidden(), page.locator("#query-error").inner_text()
            vips = sum(1 for r in rows if r["tags"] and "vip" in r["tags"])
            assert int(page.locator("#query-count").get_attribute("data-count")) == vips
            assert page.locator("#query-exact").inner_text() == "yes"

            # a non-string element type: the typed element is counted with array_contains (a JSON predicate)
            card.locator("tr[data-column=nums] .explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            assert page.locator("#top-title").inner_text().lower() == "top nums (array elements) by rows"
            page.locator("#value-input").fill("7")
            page.locator("#value-result").filter(has_text=" rows").wait_for()
            sevens = sum(1 for r in rows if r["nums"] and 7 in r["nums"])
            assert f"{sevens:,} rows whose array holds it" in page.locator("#value-result").inner_text()
            assert page.locator("#value-result a.prefill").get_attribute("data-where") == "array_contains(nums, 7)"
        finally:
            context.close()
