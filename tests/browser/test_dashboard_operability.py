"""What a newcomer met on the dashboard (issue 23, item 7): each case against a real service in headless Chromium.

A typed 1e999 in a DOUBLE look-up is an error (never "null — 0 rows"); jobs show their duration, message and log
link; a multi-column build's "rows indexed" says it counts rows per column; tables fit a 1400 px window; the index
panel closes; explain says when an answer came from the cache; top values rank NULL with the values.
Expected figures come from pandas over the source files and the API's own job records.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

import pandas as pd
import pytest

from service.demo.events import write_events
from tests.api.helpers import wait_job
from tests.unit.tables.paimon.paimon_tables import create_table, pypaimon_read

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROWS = 4_000
COLUMNS = ("status", "country", "amount")
PAIMON_ROWS = 2_000
PAIMON_COLUMNS = ("status", "flag", "code")


@pytest.fixture(scope="module")
def served(start_service, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Events in two Parquet files, a job per column and a repeat that finds nothing to build; a Paimon table
    (pypaimon's) whose one job indexes PAIMON_COLUMNS (several columns in one build: Paimon tables only)."""
    wh = tmp_path_factory.mktemp("operability") / "wh"
    paths = write_events(wh / "source" / "events", rows=ROWS, files=2, seed=23)
    df = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    location = create_table(wh / "source" / "paimon", "pevents", commits=2, rows=PAIMON_ROWS // 2)
    with start_service(wh) as (url, http):
        http.put("/v1/tables/events", json={"location": str(paths[0].parent)}).raise_for_status()
        http.put("/v1/tables/pevents", json={"format": "paimon", "location": str(location)}).raise_for_status()
        for column in COLUMNS:
            job = http.post("/v1/create_global_index", json={"table": "events", "index_column": column}
                            ).raise_for_status().json()["job_id"]
            assert wait_job(http, job)["state"] == "succeeded"
        again = http.post("/v1/create_global_index", json={"table": "events", "index_column": "status"}
                          ).raise_for_status().json()["job_id"]
        assert wait_job(http, again)["state"] == "succeeded"
        built = http.post("/v1/create_global_index", json={"table": "pevents", "index_column": ",".join(PAIMON_COLUMNS)}
                          ).raise_for_status().json()["job_id"]
        assert wait_job(http, built)["state"] == "succeeded"
        yield {"url": url, "http": http, "df": df, "built": built, "again": again,
               "paimon_rows": pypaimon_read(location, ["dt"]).num_rows}


@pytest.fixture()
def page(browser, served) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    pg.goto(f"{served['url']}/dashboard")
    pg.locator("#tables .table-card[data-table=events] tr[data-column=amount]").wait_for()
    pg.locator(f"#jobs tr[data-job='{served['again']}']").wait_for()
    try:
        yield pg
    finally:
        context.close()


def _explore(page, column: str) -> None:
    page.locator(f"#tables .table-card[data-table=events] tr[data-column={column}] .explore-btn").click()
    page.locator("#explore-section").wait_for(state="visible")
    page.locator("#top-chart svg .chart-row").first.wait_for()


def test_a_double_that_overflows_is_an_error_not_null(page, served) -> None:
    # the API: a 400 naming the literal and the type (the literal parser, not the page, decides)
    r = served["http"].post("/v1/tables/events/query",
                            json={"predicate": {"op": "eq", "column": "amount", "value": "1e999"}, "result": "count"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_literal", r.text
    assert "'1e999'" in r.json()["error"]["message"] and "not a finite double" in r.json()["error"]["message"]
    _explore(page, "amount")
    box = page.locator("#value-result")
    for typed in ("1e999", "-1e999"):
        page.locator("#value-input").fill(typed)
        page.wait_for_function("t => document.querySelector('#value-result').textContent.includes(t)", arg=typed)
        assert "error-box" in box.get_attribute("class")
        assert "not a finite double" in box.inner_text() and "null" not in box.inner_text().lower()
    # Infinity spelled as a word is a key (none of the amounts): 0 rows, no error
    page.locator("#value-input").fill("Infinity")
    page.locator("#value-result").filter(has_text="0 rows").wait_for()
    assert "error-box" not in (box.get_attribute("class") or "")
    # and a finite value still counts as pandas does
    value = float(served["df"].amount.value_counts().index[0])
    page.locator("#value-input").fill(repr(value))
    page.locator("#value-result").filter(has_text=f"{int((served['df'].amount == value).sum()):,} rows").wait_for()


def test_jobs_show_duration_message_log_link_and_rows_per_column(page, served) -> None:
    http = served["http"]
    for job_id in (served["built"], served["again"]):
        job = http.get(f"/v1/jobs/{job_id}").json()
        row = page.locator(f"#jobs tr[data-job='{job_id}'][data-state=succeeded]")
        expected = job.get("duration_s")
        if expected is None:   # until the API carries duration_s: the job's own timestamps
            expected = (datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["started_at"])
                        ).total_seconds()
        cell = row.locator("td.job-duration")
        assert float(cell.get_attribute("data-seconds")) == pytest.approx(expected, abs=0.01)
        assert re.fullmatch(r"\d+\.\d s|\d+ min \d+ s", cell.inner_text()), cell.inner_text()
        assert row.locator("a.job-log").get_attribute("href") == f"/v1/jobs/{job_id}/log"
    # the build that found nothing says so under its row
    message = http.get(f"/v1/jobs/{served['again']}").json()["message"]
    assert message and "nothing to build" in message
    assert page.locator(f"#jobs tr.job-message[data-message-of='{served['again']}']").inner_text() == message
    assert page.locator(f"#jobs tr.job-message[data-message-of='{served['built']}']").count() == 0
    # rows_indexed counts each column's rows: 3 columns of the table's rows (pypaimon's count), and the cell says so
    rows = served["paimon_rows"]
    cell = page.locator(f"#jobs tr[data-job='{served['built']}'] td.rows-indexed")
    assert http.get(f"/v1/jobs/{served['built']}").json()["progress"]["rows_indexed"] == 3 * rows
    assert cell.inner_text().split("\n") == [f"{3 * rows:,}", f"{rows:,} rows × 3 columns"]
    assert page.locator(f"#jobs tr[data-job='{served['again']}'] .rows-per-column").count() == 0
    # duration_s, once the API has it, wins over the timestamps; a running job counts up to now
    assert page.evaluate("jobSeconds({duration_s: 12.5, started_at: '2026-01-01T00:00:00+00:00',"
                         " finished_at: '2026-01-01T00:01:00+00:00'})") == 12.5
    assert page.evaluate("jobSeconds({started_at: '2026-01-01T00:00:00+00:00',"
                         " finished_at: '2026-01-01T00:01:00+00:00'})") == 60
    assert page.evaluate("jobSeconds({state: 'queued'})") is None
    # the log link opens the log in the page (with the token when one is set); its text or the API's error
    page.locator(f"#jobs tr[data-job='{served['built']}'] a.job-log").click()
    body = page.locator("#job-log-body")
    page.wait_for_function("() => document.querySelector('#job-log-body').textContent !== 'loading…'")
    api = http.get(f"/v1/jobs/{served['built']}/log")
    if api.status_code == 200:
        assert body.inner_text().strip() == (api.text.strip() or "(the log is empty)")
    else:
        assert str(api.status_code) in body.inner_text() or api.json()["error"]["code"] in body.inner_text()
    page.locator("#job-log-close").click()
    assert page.locator("#job-log").is_hidden()


def test_tables_fit_a_1400_px_window(page, served) -> None:
    page.locator("#query-where").fill("status = 'error'")
    page.locator("#query-run").click()
    page.locator("#query-result").wait_for(state="visible")
    # no page-wide horizontal scroll, and every table fits its panel without scrolling
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    fits = page.evaluate("() => [...document.querySelectorAll('.table-scroll')].map(s => [s.scrollWidth, s.clientWidth])")
    assert fits and all(sw <= cw for sw, cw in fits), fits
    # headers, figures, types, dates and bar labels each stay on one line
    lines = page.evaluate("""() => {
      const lines = (e) => {
        const r = document.createRange(); r.selectNodeContents(e);
        const tops = [...r.getClientRects()].filter(x => x.width > 0).map(x => x.bottom).sort((a, b) => a - b);
        return tops.filter((t, i) => i === 0 || t - tops[i - 1] > 8).length;
      };
      const sel = 'table.grid th, table.grid td.num:not(.rows-indexed), td.index-type, td.nowrap, .bar-label, '
        + 'table.grid tr:not(.job-message):not(.job-error) > td:first-child';
      return [...document.querySelectorAll(sel)].filter(e => e.textContent.trim())
        .map(e => [e.textContent.trim(), lines(e)]).filter(([, n]) => n > 1);
    }""")
    assert lines == [], lines


def test_the_index_panel_closes_with_its_button_and_escape(page, served) -> None:
    panel = page.locator("#explore-section")
    _explore(page, "country")
    page.locator("#explore-close").click()
    assert panel.is_hidden()
    _explore(page, "amount")   # a number look-up: no suggestion list, so one Escape closes the panel
    page.locator("#value-input").press("Escape")
    assert panel.is_hidden()
    _explore(page, "country")  # a string look-up: the first Escape closes the suggestions, the second the panel
    page.locator("#value-input").press_sequentially("D", delay=30)
    page.locator("#suggestions li[data-value]").first.wait_for()
    page.locator("#value-input").press("Escape")
    assert page.locator("#suggestions").is_hidden() and panel.is_visible()
    page.locator("#value-input").press("Escape")
    assert panel.is_hidden()
    _explore(page, "status")   # and it opens again, on the asked index
    assert page.locator("#explore-title").inner_text() == "events.status"


def test_explain_says_when_the_answer_came_from_cache(page, served) -> None:
    where = "country = 'DE' AND amount > 50"
    df = served["df"]
    page.locator("#query-where").fill(where)
    page.locator("#query-run").click()
    page.locator("#query-explain tr[data-key=from_cache]").wait_for()
    page.wait_for_function("() => !document.querySelector('#query-run').disabled")
    page.evaluate("document.querySelector('#query-explain').replaceChildren()")
    page.locator("#query-run").click()   # the repeat reads nothing: every file's reader and bitmap are cached
    page.locator("#query-explain tr[data-key=from_cache]").wait_for()
    assert int(page.locator("#query-count").get_attribute("data-count")) == int(
        (df.country.eq("DE") & (df.amount > 50)).sum())
    explain = page.locator("#query-explain")
    assert explain.locator("tr[data-key=from_cache] td").nth(1).inner_text() == "true"
    assert explain.locator("tr[data-key=bytes_read] td").nth(1).inner_text() == "0"
    files = explain.locator("tr[data-key=files_read] td").nth(1).inner_text()
    assert explain.locator("tr[data-key=files_cached] td").nth(1).inner_text() == files != "0"
    assert f"all {files} index files were already open" in explain.locator(".from-cache").inner_text()


def test_top_values_rank_null_with_the_values(page, served) -> None:
    df = served["df"]
    for column in ("country", "status"):
        _explore(page, column)
        page.wait_for_function(f"() => document.querySelector('#explore-title').textContent === 'events.{column}'")
        page.locator("#top-chart svg .chart-row[data-value=NULL]").wait_for()
        bars = page.locator("#top-chart svg .chart-row")
        shown = [(bars.nth(i).get_attribute("data-value"), int(bars.nth(i).get_attribute("data-rows")))
                 for i in range(bars.count())]
        truth = df[column].value_counts(dropna=False)
        truth.index = ["NULL" if pd.isna(k) else k for k in truth.index]
        # the top 15 counts, NULL's among them, each value with its own count (ties may list either value)
        assert [n for _, n in shown] == list(truth.head(15).values)
        assert all(truth[v] == n for v, n in shown) and dict(shown)["NULL"] == int(df[column].isna().sum()) > 0


def test_a_picked_value_stays_when_a_late_suggestion_list_arrives(page, served) -> None:
    """A look-up answered after the user picked a value (the list for a later keystroke, slow under load) must
    neither clear the picked value's answer nor reopen the list (it did: the click on 'query these rows' then
    found nothing to click)."""
    _explore(page, "status")
    page.locator("#value-input").fill("o")
    page.locator("#suggestions li[data-value=ok]").wait_for()
    held: list = []
    pattern = re.compile(r".*/indexes/status/values\?.*order=value.*")
    page.route(pattern, lambda route: held.append(route))   # the next look-up waits until the test lets it go
    page.locator("#value-input").press("k")
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the keystroke asked for no suggestions"
    page.locator("#suggestions li[data-value=ok]").dispatch_event("mousedown")
    held[0].continue_()
    page.unroute(pattern)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)
    ok = int((served["df"].status == "ok").sum())
    assert f"ok — {ok:,} rows" in page.locator("#value-result").inner_text()
    assert page.locator("#value-result a.prefill").get_attribute("data-where") == "status = 'ok'"
    assert page.locator("#suggestions").is_hidden()
