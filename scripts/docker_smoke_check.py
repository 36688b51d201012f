"""The demo against the compose stack (docker/compose.yaml), checked: run by scripts/docker-smoke.sh on the host.

1. pypaimon (this checkout's .venv) writes a Paimon table to the stack's S3 endpoint through its published port;
2. it is registered in bgix (`PUT /v1/tables/events`);
3. bitmap and btree indexes are built on the Spark cluster (`POST /v1/create_global_index`), the job polled to
   success, and the Spark master shows the build's application on its worker;
4. each query's rows (bgix's row ids, mapped to `event_id` by pypaimon's own read of `[event_id, _ROW_ID]`) and
   count must equal pyarrow's filter over the source rows written in step 1. Exit 1 on any mismatch.

Only loopback addresses: the stack's ports are published on 127.0.0.1.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon import CatalogFactory

from service.client import Client
from service.demo.paimon_events import append_arrow, sample_commits, sample_schema

TABLE = "events"
BUCKET = "bgix"
WAREHOUSE = f"s3://{BUCKET}/paimon"          # the Paimon catalog; bgix's own warehouse is s3://bgix/warehouse
DATABASE = "demo"
LOCATION = f"{WAREHOUSE}/{DATABASE}.db/{TABLE}"
COLUMNS = "status,country,tenant,event_id"
FAMILIES = "bitmap,bitmap,bitmap,btree"

F = pc.field
# (where, the same predicate as a pyarrow expression over the source rows, written independently of bgix).
# pyarrow's filter keeps only TRUE rows, so a null compared is left out, as in SQL.
QUERIES: list[tuple[str, Callable[[], pc.Expression]]] = [
    ("status = 'error'", lambda: F("status") == "error"),
    ("country IN ('DE', 'FR', 'NL')", lambda: F("country").isin(["DE", "FR", "NL"])),
    ("NOT (status = 'ok')", lambda: ~(F("status") == "ok")),
    ("tenant LIKE 'acme%'", lambda: pc.starts_with(F("tenant"), "acme")),
    ("status = 'timeout' AND country = 'US'", lambda: (F("status") == "timeout") & (F("country") == "US")),
    ("country IS NULL", lambda: F("country").is_null()),
    ("tenant >= 'globex' AND tenant < 'hooli'", lambda: (F("tenant") >= "globex") & (F("tenant") < "hooli")),
    ("event_id >= 1000 AND event_id < 51000", lambda: (F("event_id") >= 1000) & (F("event_id") < 51000)),
    ("event_id IN (0, 7, 99999, 123456789)", lambda: F("event_id").isin([0, 7, 99999, 123456789])),
    ("status = 'error' OR event_id < 100", lambda: (F("status") == "error") | (F("event_id") < 100)),
]


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def catalog_options(s3_url: str) -> dict[str, str]:
    """pypaimon's own option names for the published moto endpoint (not bgix's mapping of fsspec options)."""
    return {"warehouse": WAREHOUSE, "fs.s3.endpoint": s3_url, "fs.s3.accessKeyId": "test",
            "fs.s3.accessKeySecret": "test", "fs.s3.region": "us-east-1", "fs.s3.path-style-access": "true"}


def write_table(s3_url: str, rows: int, commits: int) -> pa.Table:
    """The events sample as a partitioned row-tracking Paimon table on S3, written by pypaimon; the source rows."""
    catalog = CatalogFactory.create(catalog_options(s3_url))
    catalog.create_database(DATABASE, True)
    catalog.drop_table(f"{DATABASE}.{TABLE}", True)   # a stack kept up (BGIX_SMOKE_KEEP=1) may hold a previous run's
    batches = list(sample_commits(rows, commits))   # the demo's own sample (service.demo.paimon_events)
    source = pa.concat_tables(batches)
    catalog.create_table(f"{DATABASE}.{TABLE}", sample_schema(), False)
    for batch in batches:   # one commit each: new table objects see the previous commit
        append_arrow(catalog.get_table(f"{DATABASE}.{TABLE}"), batch)
    return source


def row_id_to_event_id(s3_url: str) -> dict[int, int]:
    """pypaimon's read of [_ROW_ID, event_id]: how a bgix row id names a source row."""
    table = CatalogFactory.create(catalog_options(s3_url)).get_table(f"{DATABASE}.{TABLE}")
    rb = table.new_read_builder().with_projection(["event_id", "_ROW_ID"])
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return dict(zip(data.column("_ROW_ID").to_pylist(), data.column("event_id").to_pylist(), strict=True))


def check(resp: httpx.Response, *ok: int) -> Any:
    if resp.status_code not in ok:
        raise SystemExit(f"FAIL: {resp.request.method} {resp.request.url} → {resp.status_code} {resp.text[:500]}")
    return resp.json()


def build(http: httpx.Client, timeout_s: float) -> dict[str, Any]:
    t0 = time.monotonic()
    job = check(http.post("/v1/create_global_index", json={"table": TABLE, "index_column": COLUMNS,
                                                            "index_type": FAMILIES}), 202)
    job_id = job["job_id"]
    say(f"POST /v1/create_global_index {COLUMNS} ({FAMILIES}) → 202, job {job_id}")
    shown = ""
    while True:
        job = check(http.get(f"/v1/jobs/{job_id}"), 200)
        line = f"{job['state']} {100 * (job['progress'].get('fraction') or 0):.0f}%"
        if line != shown:
            say(f"  job {job['state']:>9}  {100 * (job['progress'].get('fraction') or 0):3.0f}%  "
                f"rows {job['progress'].get('rows_indexed') or 0:,}")
            shown = line
        if job["state"] in ("succeeded", "failed", "cancelled"):
            break
        if time.monotonic() - t0 > timeout_s:
            raise SystemExit(f"FAIL: job {job_id} still {job['state']} after {timeout_s:.0f} s")
        time.sleep(0.5)
    if job["state"] != "succeeded":
        log = http.get(f"/v1/jobs/{job_id}/log").text
        raise SystemExit(f"FAIL: job {job_id} {job['state']}: {job.get('error')}\n{log[-3000:]}")
    phases = job["progress"].get("phases") or {}
    say(f"job succeeded in {job['duration_s']:.2f} s (request → done {time.monotonic() - t0:.2f} s), "
        f"snapshot {job['snapshot_id']}, phases "
        + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items() if isinstance(v, (int, float))))
    return dict(job)


def spark_cluster(spark_ui: str) -> None:
    """The build ran on the cluster: the master has a live worker and bgix's application holds its cores."""
    with urllib.request.urlopen(f"{spark_ui}/json/", timeout=10) as r:
        master = json.load(r)
    apps = [a for a in master["activeapps"] if a["name"].startswith("bgix")]
    workers = [w for w in master["workers"] if w["state"] == "ALIVE"]
    say(f"Spark master {master['url']}: {len(workers)} alive worker(s) "
        f"({', '.join(w['host'] + ' ' + str(w['cores']) + ' cores' for w in workers)}), application(s) "
        f"{', '.join(a['name'] + ' ' + a['id'] + ' ' + str(a['cores']) + ' cores' for a in apps)}")
    if not workers or not apps or not any(a["cores"] > 0 for a in apps):
        raise SystemExit("FAIL: the Spark master shows no live worker running bgix's build application")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bgix", default="http://127.0.0.1:8000")
    p.add_argument("--s3", default="http://127.0.0.1:5000")
    p.add_argument("--spark-ui", default="http://127.0.0.1:8080")
    p.add_argument("--token", default="change-me")
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--commits", type=int, default=3)
    p.add_argument("--build-timeout", type=float, default=900.0)
    args = p.parse_args()
    t_all = time.monotonic()

    headers = {"Authorization": f"Bearer {args.token}"}
    with httpx.Client(base_url=args.bgix, headers=headers, timeout=60) as http:
        check(http.delete(f"/v1/tables/{TABLE}"), 200, 404)   # a previous run's registration, if any
    t0 = time.monotonic()
    source = write_table(args.s3, args.rows, args.commits)
    say(f"pypaimon wrote {LOCATION}: {source.num_rows:,} rows in {args.commits} commits, partitioned by region "
        f"({time.monotonic() - t0:.2f} s)")

    with httpx.Client(base_url=args.bgix, headers=headers, timeout=60) as http:
        t0 = time.monotonic()
        check(http.put(f"/v1/tables/{TABLE}", json={"format": "paimon", "location": LOCATION}), 200, 201)
        shown = check(http.get(f"/v1/tables/{TABLE}"), 200)["paimon"]
        say(f"PUT /v1/tables/{TABLE} → registered: Paimon snapshot {shown['snapshot_id']}, "
            f"{shown['row_count']:,} rows ({time.monotonic() - t0:.2f} s)")
        if shown["row_count"] != source.num_rows:
            raise SystemExit(f"FAIL: bgix sees {shown['row_count']} rows, pypaimon wrote {source.num_rows}")
        build(http, args.build_timeout)
        spark_cluster(args.spark_ui)
        indexes = check(http.get(f"/v1/tables/{TABLE}/indexes"), 200)
        say("indexes: " + ", ".join(f"{i['column']} ({i['index_type']}, {i['files']} file(s))"
                                    for i in indexes["indexes"]))

    ids = row_id_to_event_id(args.s3)
    failures = 0
    with Client(args.bgix, args.token) as client:
        for where, expr in QUERIES:
            want = set(source.filter(expr()).column("event_id").to_pylist())
            t0 = time.monotonic()
            rows = client.rows(TABLE, where)   # exact answers only: an inexact one raises
            ms = 1000 * (time.monotonic() - t0)
            count = client.count(TABLE, where)
            got = {ids[int(r)] for r in rows}
            same = got == want and len(rows) == count == len(want)
            failures += not same
            say(f"  {'ok ' if same else 'MISMATCH'} bgix {len(rows):>7,} rows (count {count:>7,}) {ms:7.1f} ms"
                f" | pyarrow {len(want):>7,}  where {where}")
    if failures:
        say(f"FAIL: {failures} of {len(QUERIES)} queries differ from pyarrow")
        return 1
    say(f"all {len(QUERIES)} queries equal pyarrow's answers over the source rows "
        f"(check took {time.monotonic() - t_all:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
