"""A Paimon table on the dashboard: its snapshot, each index's writer (pypaimon, bgix), and the query box.

pypaimon makes the table, deletes rows and builds one index; the service builds the other (a bgix job).
Expected figures come from pypaimon (its snapshot manager, its read of [columns, _ROW_ID]); never our output.
"""
from __future__ import annotations

import re
import time

import pytest
from pypaimon.globalindex.create_global_index import create_global_index

from tests.api.helpers import wait_job
from tests.browser.conftest import Service
from tests.unit.tables.paimon.paimon_tables import create_table, delete_rows, pypaimon_read, pypaimon_table

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_paimon_table_snapshot_origins_and_query(browser, start_service, tmp_path) -> None:
    wh = tmp_path / "wh"
    location = create_table(wh / "source" / "paimon", "events", commits=3, rows=1000)
    delete_rows(location, [3, 4, 1500, 2500])
    assert create_global_index(pypaimon_table(location), "code", index_type="bitmap") > 0
    with start_service(wh, snapshot_ttl_seconds="0.2") as (url, http):
        http.put("/v1/tables/pevents", json={"format": "paimon", "location": str(location)}).raise_for_status()
        job_id = http.post("/v1/create_global_index", json={"table": "pevents", "index_column": "status"}
                           ).raise_for_status().json()["job_id"]
        assert wait_job(http, job_id)["state"] == "succeeded"
        latest = int(pypaimon_table(location).snapshot_manager().get_latest_snapshot().id)
        deadline = time.monotonic() + 30  # the service notices the bgix commit within its snapshot TTL
        while http.get("/v1/tables/pevents").json()["paimon"]["snapshot_id"] != latest:
            assert time.monotonic() < deadline, "the service never showed the latest Paimon snapshot"
            time.sleep(0.1)
        df = pypaimon_read(location, ["status", "code", "dt"]).to_pandas()

        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(20_000)
        try:
            page.goto(f"{url}/dashboard")
            card = page.locator("#tables .table-card[data-table=pevents]")
            card.locator("tr[data-column=status]").wait_for()
            head = card.locator(".table-head").inner_text()
            assert "paimon" in head and f"snapshot #{latest}" in head
            assert card.locator(".paimon-snapshot").get_attribute("data-snapshot") == str(latest)
            assert f"{len(df):,} rows · 4 deleted" in head and "partitioned by dt" in head

            status, code = card.locator("tr[data-column=status]"), card.locator("tr[data-column=code]")
            for row in (status, code):   # both writers built bitmap indexes: the family badge says so
                assert row.get_attribute("data-family") == "bitmap"
                assert row.locator(".badge.family").inner_text() == "bitmap"
            assert status.locator(".origin").count() == 1 and code.locator(".origin").count() == 1
            assert status.locator(".origin").get_attribute("data-origin") == "bgix"
            assert status.locator(".origin").get_attribute("data-job") == job_id
            assert job_id in status.locator(".origin").get_attribute("title")
            assert code.locator(".origin").get_attribute("data-origin") == "pypaimon"
            # pypaimon 2.1 writes numeric keys in serialized-byte order (spec §2.7)
            assert code.locator(".key-order").get_attribute("data-order") == "bytes"
            ids = sorted(int(i) for i in df["_ROW_ID"])
            assert status.locator("td.ranges").inner_text() == f"{ids[0]}–{ids[-1]}"
            cells = status.locator("td").all_inner_texts()
            assert int(re.sub(r"[^\d]", "", cells[5])) == df.status.nunique(dropna=True)
            assert int(re.sub(r"[^\d]", "", cells[6])) == int(df.status.isna().sum())

            # the query box over both writers' indexes: pypaimon's read is the judge
            where = "status = 'error' AND code < 0 OR code = 7"
            mask = (df.status.eq("error") & (df.code < 0)) | df.code.eq(7)
            page.select_option("#query-table", "pevents")
            page.fill("#query-where", where)
            page.click("#query-run")
            page.locator("#query-result").wait_for(state="visible")
            assert int(page.locator("#query-count").get_attribute("data-count")) == int(mask.sum())
            assert page.locator("#query-exact").inner_text() == "yes"
            assert page.locator("#query-coverage").inner_text() == "complete"

            # the value look-up on the bgix-built index of the Paimon table
            status.locator(".explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            page.locator("#value-input").press_sequentially("err", delay=30)
            page.locator("#suggestions li[data-value=error]").wait_for()
            assert page.locator("#suggestions li[data-value=error] .rows").inner_text() == \
                f"{int(df.status.eq('error').sum()):,} rows"
            Service.screenshot(page, "dashboard-paimon")
        finally:
            context.close()
