"""The dashboard in headless Chromium against a real service; expected figures come from pandas on the source rows."""
from __future__ import annotations

import re
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.demo.events import write_events
from tests.api.helpers import wait_job

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _int(text: str) -> int:
    return int(re.sub(r"[^\d]", "", text))


def test_token_is_asked_once_and_kept_in_session_storage(page, service) -> None:
    assert page.evaluate("sessionStorage.getItem('bgixToken')") == service.token
    page.click("#refresh-btn")
    page.locator("#tables .table-card[data-table=events]").wait_for()
    assert page.locator("#token-panel").is_hidden()


def test_a_401_that_lands_after_the_token_was_entered_does_not_ask_again(browser, service) -> None:
    """The page's first loads (tables, jobs) all meet 401. When the jobs' 401 comes back only after the token was
    entered (a slow answer; seen in CI), the page must send it again with that token, not ask a second time."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    held: list = []
    page.route("**/v1/jobs", lambda route: held.append(route))   # the first jobs load waits until let go
    try:
        page.goto(f"{service.url}/dashboard")
        page.locator("#token-panel").wait_for(state="visible")
        for _ in range(100):
            if held:
                break
            page.wait_for_timeout(50)
        assert held and held[0].request.headers.get("authorization") is None
        page.fill("#token-input", service.token)
        page.click("#token-form button[type=submit]")
        page.locator("#tables .table-card[data-table=events]").wait_for()
        held[0].continue_()   # reaches the service without a token: 401, after the token is in sessionStorage
        page.unroute("**/v1/jobs")
        page.locator("#jobs tr[data-job]").first.wait_for()
        assert page.locator("#token-panel").is_hidden()
        jobs = service.http.get("/v1/jobs").raise_for_status().json()["jobs"]
        assert {j["id"] for j in jobs} <= set(page.locator("#jobs tr[data-job]").evaluate_all(
            "rows => rows.map(r => r.dataset.job)"))
    finally:
        context.close()


def test_tables_and_index_figures(page, service) -> None:
    df = service.df
    card = page.locator("#tables .table-card[data-table=events]")
    for column in service.indexed:
        row = card.locator(f"tr[data-column={column}]")
        row.wait_for()
        cells = row.locator("td").all_inner_texts()
        # Column | Type | Rows | Files | Size | Distinct | Nulls | Coverage | Snapshot | Built
        assert _int(cells[2]) == len(df)
        assert _int(cells[5]) == df[column].nunique(dropna=True)
        assert _int(cells[6]) == int(df[column].isna().sum())
        assert "100.0%" in cells[7]
        assert "fresh" in cells[0]
        # the family: a badge (its title says what the family is for) and the row's key with the column
        assert row.get_attribute("data-family") == "bitmap"
        assert cells[1] == "bitmap · string"
        assert "every predicate" in row.locator(".badge.family").get_attribute("title")
    assert f"{len(df):,} rows" in card.locator(".table-head").inner_text()
    service.screenshot(page, "dashboard-overview")


def test_prefix_autocomplete_and_top_values_chart(page, service) -> None:
    df = service.df
    page.locator("#tables tr[data-column=tenant] .explore-btn").click()
    page.locator("#top-chart svg .chart-row").first.wait_for()
    expected_top = df.tenant.value_counts().head(15)
    bars = page.locator("#top-chart svg .chart-row")
    got = [(bars.nth(i).get_attribute("data-value"), int(bars.nth(i).get_attribute("data-rows")))
           for i in range(bars.count())]
    assert [r for _, r in got] == list(expected_top.values)
    assert dict(got) == {k: int(v) for k, v in expected_top.items()}

    page.locator("#value-input").press_sequentially("wonka-0", delay=30)
    items = page.locator("#suggestions li[data-value]")
    page.wait_for_function(
        "() => { const li = document.querySelectorAll('#suggestions li[data-value]');"
        " return li.length > 0 && [...li].every(x => x.dataset.value.startsWith('wonka-0')); }")
    counts = df.tenant[df.tenant.str.startswith("wonka-0", na=False)].value_counts()
    expected = sorted(counts.index)[:10]
    assert items.all_inner_texts() and [items.nth(i).get_attribute("data-value") for i in range(items.count())] == expected
    service.screenshot(page, "dashboard-explore")
    # Keyboard: second suggestion via ArrowDown twice + Enter.
    page.locator("#value-input").press("ArrowDown")
    page.locator("#value-input").press("ArrowDown")
    page.locator("#value-input").press("Enter")
    assert page.locator("#value-input").input_value() == expected[1]
    assert f"{counts[expected[1]]:,} rows" in page.locator("#value-result").inner_text()


def test_query_count_row_ids_and_explain(page, service) -> None:
    df = service.df
    where = "status = 'error' AND country IN ('DE', 'FR') OR tenant LIKE 'acme-0%'"
    mask = ((df.status.eq("error") & df.country.isin(["DE", "FR"]))
            | df.tenant.str.startswith("acme-0", na=False))
    expected_ids = sorted(int(i) for i in df.index[mask])
    page.select_option("#query-table", "events")
    page.fill("#query-limit", "25")
    page.fill("#query-where", where)
    page.click("#query-run")
    page.locator("#query-result").wait_for(state="visible")
    assert int(page.locator("#query-count").get_attribute("data-count")) == len(expected_ids)
    shown = page.locator("#query-rowids").inner_text()
    first = [int(x) for x in re.findall(r"\d+", shown.split("…")[0])][:25]
    assert first == expected_ids[:25]
    assert page.locator("#query-exact").inner_text() == "yes"
    assert page.locator("#query-explain").inner_text().strip() != "no explain figures returned"
    service.screenshot(page, "dashboard-query")


def test_inexact_answers_are_shown_as_what_they_are(page, service) -> None:
    """A declined answer is "not answered", never "0 rows"; a superset and rows no index covers say so. The
    service's answers are stood in for (the page's query request answered by the test), so what is shown depends
    only on the answer's own `exact` and `coverage`, however the service answers such predicates."""
    answers = {
        "declined": {"count": 0, "exact": False, "row_ids": [], "coverage": {"complete": True, "uncovered_ranges": []}},
        "superset": {"count": 1234, "exact": False, "row_ids": [1, 2],
                     "coverage": {"complete": True, "uncovered_ranges": []}},
        "incomplete": {"count": 7, "exact": True, "row_ids": [3],
                       "coverage": {"complete": False, "uncovered_ranges": [[100, 2099]]}},
    }

    def answer(route) -> None:
        where = route.request.post_data_json["where"]
        route.fulfill(json={"result": "row_ids", "snapshots": {}, "next_cursor": None, **answers[where]})

    page.route("**/v1/tables/events/query", answer)
    page.select_option("#query-table", "events")
    shown = {}
    for kind in answers:
        page.fill("#query-where", kind)
        page.click("#query-run")
        page.locator(f"#query-count[data-answer={kind}]").wait_for()
        shown[kind] = (page.locator("#query-count").inner_text(), page.locator("#query-exact").inner_text(),
                       page.locator("#query-coverage").inner_text(), page.locator("#query-rowids").inner_text())
    assert shown["declined"][0] == "not answered" and "declined" in shown["declined"][1]
    assert "none answered" in shown["declined"][3] and "0" not in shown["declined"][0]
    assert shown["superset"][0] == "≤ 1,234" and "superset" in shown["superset"][1]
    assert shown["incomplete"][0] == "7 + ?" and shown["incomplete"][1].startswith("no")
    assert shown["incomplete"][2] == "2,000 rows not covered by an index (not evaluated)"


def test_query_error_is_shown_as_the_api_words_it(page, service) -> None:
    where = "no_such_column = 1"
    api = service.http.post("/v1/tables/events/query", json={"where": where, "result": "count"})
    assert api.status_code == 400
    err = api.json()["error"]
    page.select_option("#query-table", "events")
    page.fill("#query-where", where)
    page.click("#query-run")
    box = page.locator("#query-error")
    box.wait_for(state="visible")
    assert box.inner_text() == f"{err['code']}: {err['message']}"


def test_start_build_and_watch_progress_to_100(page, service) -> None:
    page.select_option("#build-table", "events")
    page.fill("#build-column", "device")
    page.fill("#build-options", "bitmap-index.dictionary-block-size=4096")
    page.click("#build-start")
    page.locator("#build-msg").filter(has_text="started").wait_for()
    job_id = page.locator("#build-msg").inner_text().split()[1]
    row = page.locator(f"#jobs tr[data-job='{job_id}']")
    row.wait_for()
    # Watch the live bar the page polls: percentages never go down and end at 100% (bounded wait).
    seen: list[float] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = row.get_attribute("data-state")
        seen.append(float(row.locator(".job-pct").inner_text().rstrip("%")))
        if state not in ("queued", "running"):
            break
        page.wait_for_timeout(100)
    assert state == "succeeded", seen
    assert seen == sorted(seen) and seen[-1] == 100.0, seen
    assert row.locator(".badge.family").inner_text() == "bitmap"   # the build's family beside its column
    assert service.wait_job(job_id)["state"] == "succeeded"
    # The finished build shows up as a new index with pandas' figures.
    device = page.locator("#tables tr[data-column=device]")
    device.wait_for(timeout=30_000)
    cells = device.locator("td").all_inner_texts()
    assert _int(cells[5]) == service.df.device.nunique()
    assert _int(cells[6]) == int(service.df.device.isna().sum())
    service.screenshot(page, "dashboard-jobs")


def test_build_error_is_shown(page, service) -> None:
    page.select_option("#build-table", "events")
    page.fill("#build-column", "status")
    page.fill("#build-options", "bitmap-index.compression=snappy")
    page.click("#build-start")
    box = page.locator("#build-error")
    box.wait_for(state="visible")
    assert box.inner_text().startswith("invalid_option:")


def test_reads_need_no_token_and_a_build_asks_for_it_once(browser, start_service, tmp_path) -> None:
    """Default settings: reads are open; the first mutating call gets 401, the page asks, then retries."""
    source = tmp_path / "wh" / "source" / "events"
    write_events(source, rows=2_000, files=2, seed=3)
    with start_service(tmp_path / "wh", token="open-sesame") as (url, http):
        http.put("/v1/tables/events", json={"location": str(source)}).raise_for_status()
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            page.goto(f"{url}/dashboard")
            page.locator("#tables .table-card[data-table=events]").wait_for()
            assert page.locator("#token-panel").is_hidden()
            page.fill("#build-column", "status")
            page.click("#build-start")
            page.locator("#token-panel").wait_for(state="visible")
            page.fill("#token-input", "open-sesame")
            page.click("#token-form button[type=submit]")
            page.locator("#build-msg").filter(has_text="started").wait_for()
            assert page.evaluate("sessionStorage.getItem('bgixToken')") == "open-sesame"
            page.locator("#jobs tr[data-state=succeeded]").wait_for(timeout=60_000)
        finally:
            context.close()


def test_rescan_shows_the_stale_badge_after_a_source_file_changes(browser, start_service, tmp_path) -> None:
    """We rewrite an indexed source file ourselves: after "Rescan files" its index must be badged stale."""
    source = tmp_path / "wh" / "source" / "events"
    paths = write_events(source, rows=3_000, files=2, seed=4)
    with start_service(tmp_path / "wh", token="tok") as (url, http):
        http.put("/v1/tables/events", json={"location": str(source)}).raise_for_status()
        job = http.post("/v1/create_global_index", json={"table": "events", "index_column": "status"}
                        ).raise_for_status().json()["job_id"]
        assert wait_job(http, job)["state"] == "succeeded"
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            page.goto(f"{url}/dashboard")
            row = page.locator("#tables tr[data-column=status]")
            row.wait_for()
            assert "fresh" in row.locator("td").first.inner_text()
            changed = pq.read_table(paths[0])
            pq.write_table(changed.slice(0, changed.num_rows - 10), paths[0])
            page.click("#tables .table-card[data-table=events] .rescan-btn")
            page.locator("#token-panel").wait_for(state="visible")  # the rescan is a write: asks for the token
            page.fill("#token-input", "tok")
            page.click("#token-form button[type=submit]")
            page.wait_for_function(
                "() => { const td = document.querySelector('#tables tr[data-column=status] td');"
                " return td && td.innerText.includes('stale'); }")
            assert f"{3_000 - 10:,} rows" in page.locator("#tables .table-card[data-table=events] .table-head").inner_text()
            # An index built after the rescan covers every live row: 100%, although the rewritten file's
            # new ids leave a hole in the id space (which must not count as uncovered).
            job = http.post("/v1/create_global_index", json={"table": "events", "index_column": "country"}
                            ).raise_for_status().json()["job_id"]
            assert wait_job(http, job)["state"] == "succeeded"
            page.click("#refresh-btn")
            country = page.locator("#tables tr[data-column=country]")
            country.wait_for()
            cells = country.locator("td").all_inner_texts()
            assert "fresh" in cells[0]
            assert _int(cells[2]) == 3_000 - 10
            assert "100.0%" in cells[7], cells
        finally:
            context.close()


def test_non_string_index_exact_look_up_and_unclipped_chart(browser, start_service, tmp_path) -> None:
    """Prefix autocomplete is for strings; a float or timestamp index looks up the typed value exactly. A column whose
    values are all distinct gets a note rather than a chart of equal bars; long (timestamp) labels are not clipped."""
    source = tmp_path / "wh" / "source" / "events"
    paths = write_events(source, rows=4_000, files=2, seed=9)
    df = pd.concat([pd.read_parquet(p) for p in paths])
    repeats = tmp_path / "wh" / "source" / "repeats"   # timestamps of several rows each: a chart of long labels
    repeats.mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame({"ts": df.ts.dropna().iloc[:20].repeat(3)}), preserve_index=False),
                   repeats / "part-0.parquet")
    with start_service(tmp_path / "wh") as (url, http):
        http.put("/v1/tables/events", json={"location": str(source)}).raise_for_status()
        http.put("/v1/tables/repeats", json={"location": str(repeats)}).raise_for_status()
        for table, column in (("events", "amount"), ("events", "ts"), ("repeats", "ts")):
            job = http.post("/v1/create_global_index", json={"table": table, "index_column": column}
                            ).raise_for_status().json()["job_id"]
            assert wait_job(http, job)["state"] == "succeeded"
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(20_000)
        events = page.locator("#tables .table-card[data-table=events]")
        try:
            page.goto(f"{url}/dashboard")
            events.locator("tr[data-column=amount] .explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            value, rows = df.amount.value_counts().index[0], int(df.amount.value_counts().iloc[0])
            page.locator("#value-input").fill(repr(float(value)))
            page.locator("#value-result").filter(has_text=" rows").wait_for()
            assert f"{rows:,} rows" in page.locator("#value-result").inner_text()

            events.locator("tr[data-column=ts] .explore-btn").click()
            assert df.ts.dropna().is_unique   # every timestamp one row: no top values to chart
            note = page.locator("#top-chart .distinct-note")
            note.wait_for()
            nulls = int(df.ts.isna().sum())
            assert note.inner_text().startswith(f"all {df.ts.nunique():,} values are distinct (1 row each)")
            assert (f"{nulls:,} rows are NULL" in note.inner_text()) == (nulls > 1)
            ts = df.ts.iloc[17]
            page.locator("#value-input").fill(ts.isoformat(sep=" "))
            page.locator("#value-result").filter(has_text=" rows").wait_for()
            assert f"{int((df.ts == ts).sum()):,} rows" in page.locator("#value-result").inner_text()

            page.locator("#tables .table-card[data-table=repeats] tr[data-column=ts] .explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            # Every label of the top-values chart starts inside the SVG (timestamps are long).
            assert page.evaluate("() => [...document.querySelectorAll('#top-chart svg .chart-row text:first-of-type')]"
                                 ".every(t => t.getBBox().x >= 0)")
        finally:
            context.close()


def test_failed_job_shows_state_and_the_api_error(browser, start_service, tmp_path) -> None:
    """A build that fails at run time (a file stands where its index directory must go) shows its error. (A list
    column for a bitmap index no longer gets this far: it is refused with 400 before any job starts.)"""
    import pyarrow as pa

    source = tmp_path / "wh" / "source" / "nested"
    source.mkdir(parents=True)
    pq.write_table(pa.table({"tags": [[1], [2, 3], None], "s": ["a", "b", "c"]}), source / "p.parquet")
    with start_service(tmp_path / "wh") as (url, http):
        http.put("/v1/tables/nested", json={"location": str(source)}).raise_for_status()
        (tmp_path / "wh" / "tables" / "nested" / "indexes" / "s").mkdir(parents=True)
        (tmp_path / "wh" / "tables" / "nested" / "indexes" / "s" / "data").write_text("in the way")
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            page.goto(f"{url}/dashboard")
            page.locator("#tables .table-card[data-table=nested]").wait_for()
            page.select_option("#build-table", "nested")
            page.fill("#build-column", "s")
            page.click("#build-start")
            page.locator("#build-msg").filter(has_text="started").wait_for()
            job_id = page.locator("#build-msg").inner_text().split()[1]
            job = wait_job(http, job_id)
            assert job["state"] == "failed" and job["error"]
            row = page.locator(f"#jobs tr[data-job='{job_id}'][data-state=failed]")
            row.wait_for(timeout=30_000)
            assert page.locator("#jobs .job-error").filter(has_text=job["error"]).count() == 1
        finally:
            context.close()


def test_broken_table_file_and_index_are_named_on_the_page(browser, start_service, tmp_path) -> None:
    """A garbage table.json, a junk data file and a corrupt index snapshot: each is named on the page,
    and the readable rest (the other index) still shows its figures."""
    warehouse = tmp_path / "wh"
    source = warehouse / "source" / "events"
    write_events(source, rows=2_000, files=2, seed=5)
    with start_service(warehouse, token="tok") as (url, http):
        for name in ("events", "other"):
            http.put(f"/v1/tables/{name}", json={"location": str(source)}).raise_for_status()
        for column in ("status", "country"):
            job = http.post("/v1/create_global_index", json={"table": "events", "index_column": column}
                            ).raise_for_status().json()["job_id"]
            assert wait_job(http, job)["state"] == "succeeded"
        junk = source / "part-junk.parquet"
        junk.write_bytes(b"not parquet")
        assert http.get("/v1/tables/events/files", params={"refresh": "true"}).json()["errors"]
        snapshots = sorted((warehouse / "tables" / "events" / "indexes" / "country" / "snapshots").glob("*.json"))
        snapshots[-1].write_text("{not json")
        (warehouse / "tables" / "other" / "table.json").write_text("garbage")
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            page.goto(f"{url}/dashboard")
            page.locator("#tables tr[data-column=status]").wait_for()
            broken = page.locator("#tables .table-card.broken[data-table=other]")
            assert "corrupt_catalog_document" in broken.inner_text() and "table.json" in broken.inner_text()
            card = page.locator("#tables .table-card[data-table=events]")
            assert "part-junk.parquet" in card.locator(".file-error").inner_text()
            index_error = card.locator(".index-error[data-column=country]").inner_text()
            assert snapshots[-1].name in index_error
            assert card.locator("tr[data-column=country]").count() == 0
        finally:
            context.close()


def test_a_paimon_fm_index_is_served_and_unserved_indexes_say_why(page, service) -> None:
    """A Paimon table (pypaimon-rust builds every index) with an fm index on `txt`, and a full-text index on the same
    column and an ivf-flat index on `emb`, which bgix does not read: the fm row is served (family fm, its distinct
    values and nulls, a query over it), the others are greyed with a "not served" badge and the reason. The table
    is registered in the shared service and forgotten at the end. Judges: the rows written, in plain Python."""
    import random

    import pyarrow as pa

    from tests.unit.index_format.fm.fm_truth import like_truth, random_texts
    from tests.unit.tables.paimon import rust_tables as rt

    wh = service.source.parent / "paimon-fm"   # inside the service's warehouse, its only storage root
    rows = random_texts(random.Random(31), 300)
    location = rt.create_table(wh, "docs", "id BIGINT, txt STRING, emb ARRAY<FLOAT>")
    rt.append(wh, "docs", pa.table({
        "id": pa.array(range(len(rows)), pa.int64()), "txt": pa.array(rows, pa.string()),
        "emb": pa.array([[float(i), 1.0, 2.0, 3.0] for i in range(len(rows))], pa.list_(pa.float32()))}))
    rt.create_index(wh, "docs", "txt", "fm")
    rt.create_index(wh, "docs", "txt", "full-text")
    rt.create_index(wh, "docs", "emb", "ivf-flat", "ivf-flat.dimension=4")
    service.http.put("/v1/tables/paimon_docs", json={"format": "paimon", "location": str(location)}).raise_for_status()
    try:
        page.click("#refresh-btn")
        card = page.locator("#tables .table-card[data-table=paimon_docs]")
        card.locator("tr[data-column=emb]").wait_for()
        fm = card.locator("tr[data-column=txt][data-family=fm]")
        assert fm.get_attribute("data-served") is None and fm.locator(".badge.fresh").count() == 1
        cells = fm.locator("td").all_inner_texts()
        # Column | Type | _ROW_IDs | Files | Size | Distinct | Nulls | Coverage | Origin | Row ranges
        assert cells[1] == "fm · string" and fm.locator(".badge.family").inner_text() == "fm"
        assert "LIKE '%x%'" in fm.locator(".badge.family").get_attribute("title")
        assert _int(cells[2]) == len(rows) and "100.0%" in cells[7]
        assert _int(cells[5]) == len({v for v in rows if v is not None}) and _int(cells[6]) == rows.count(None)
        assert fm.locator(".explore-btn").count() == 1
        listed = {(i["column"], i["index_type"]): i
                  for i in service.http.get("/v1/tables/paimon_docs").json()["paimon"]["indexes"]}
        for column, family, words in (("txt", "full-text", "full-text"), ("emb", "ivf-flat", "vector index")):
            row = card.locator(f"tr[data-column={column}][data-family={family}]")
            assert row.get_attribute("data-served") == "false"
            badge = row.locator(".badge.unserved")
            assert badge.inner_text() == "not served"
            reason = listed[column, family]["reason"]
            assert words in reason and badge.get_attribute("title") == reason
            assert row.locator("td.unserved-reason").inner_text() == reason
            assert row.locator(".badge.family").inner_text() == family and row.locator(".explore-btn").count() == 0
        service.screenshot_of(card, "dashboard-fm")
        # the query box answers from the fm index, exactly
        page.select_option("#query-table", "paimon_docs")
        page.fill("#query-where", "txt LIKE '%vip%'")
        page.click("#query-run")
        page.locator("#query-result").wait_for(state="visible")
        assert int(page.locator("#query-count").get_attribute("data-count")) == len(like_truth(rows, "%vip%"))
        assert page.locator("#query-exact").inner_text() == "yes"
    finally:
        service.http.delete("/v1/tables/paimon_docs").raise_for_status()
