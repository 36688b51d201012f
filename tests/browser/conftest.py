"""Browser-test fixtures: a real `bgix serve` on a free loopback port over a warehouse with prebuilt indexes,
and headless Debian Chromium driven by Playwright (never `playwright install`)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pyarrow.dataset as ds
import pytest

from service.demo.events import write_events
from tests.api.helpers import wait_job, wait_until

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TOKEN = "browser-test-token"
ROWS = 30_000
INDEXED = ("status", "country", "tenant")
# Screenshots go to docs/screenshots/ only when asked (BGIX_UPDATE_SCREENSHOTS=1), so a test run leaves the
# tree clean; otherwise to a throw-away folder so the capture path is still exercised.
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("BGIX_UPDATE_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "bgix-screenshots"
)


@dataclass
class Service:
    url: str
    token: str
    source: Path
    df: pd.DataFrame          # the source rows in row-id order (files in the catalog's first_row_id order)
    http: httpx.Client
    indexed: tuple[str, ...] = INDEXED

    def wait_job(self, job_id: str, timeout: float = 180.0) -> dict[str, Any]:
        return wait_job(self.http, job_id, timeout)

    @staticmethod
    def screenshot(pg: object, name: str) -> None:
        """Save a full-page PNG of the main views (README and docs use the committed copies)."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)

    @staticmethod
    def screenshot_of(locator: object, name: str) -> None:
        """Save a PNG of one element (a table's card), for pictures of one feature."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        locator.screenshot(path=str(SCREENSHOTS / f"{name}.png"))  # type: ignore[attr-defined]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(http: httpx.Client, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    def ready() -> bool:
        assert proc.poll() is None, f"bgix serve exited with {proc.returncode}"
        try:
            return http.get("/v1/tables").status_code == 200
        except httpx.TransportError:
            return False

    wait_until(ready, timeout, "bgix serve to become ready", interval=0.2)


@contextmanager
def running_service(warehouse: Path, **settings: str) -> Iterator[tuple[str, httpx.Client]]:
    """`bgix serve` on a free loopback port with BGIX_* `settings`; terminated (then killed) on exit."""
    port = _free_port()
    env = dict(os.environ, BGIX_WAREHOUSE=str(warehouse), BGIX_BUILD_ENGINE="local",
               **{f"BGIX_{k.upper()}": v for k, v in settings.items()})
    env.pop("BGIX_ALLOWED_ROOTS", None)
    warehouse.mkdir(parents=True, exist_ok=True)
    log = open(warehouse.parent / f"serve-{port}.log", "wb")
    proc = subprocess.Popen([sys.executable, "-c", "from service.cli import main; raise SystemExit(main())",
                             "serve", "--host", "127.0.0.1", "--port", str(port), "--no-access-log"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    token = settings.get("token")
    http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"} if token else {}, timeout=60.0)
    try:
        _wait_ready(http, proc)
        yield url, http
    finally:
        http.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


@pytest.fixture(scope="session")
def start_service() -> object:
    """`running_service` for tests that need a service with other settings than `service`."""
    return running_service


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """Token required even for reads, three prebuilt indexes (local engine), the source rows as pandas."""
    warehouse = tmp_path_factory.mktemp("browser") / "wh"
    source = warehouse / "source" / "events"
    write_events(source, rows=ROWS, files=3, seed=11)
    with running_service(warehouse, token=TOKEN, read_token_required="true") as (url, http):
        http.put("/v1/tables/events", json={"location": str(source), "format": "parquet"}).raise_for_status()
        for column in INDEXED:
            job_id = http.post("/v1/create_global_index",
                               json={"table": "events", "index_column": column, "index_type": "bitmap"}
                               ).raise_for_status().json()["job_id"]
            assert wait_job(http, job_id)["state"] == "succeeded"
        files = http.get("/v1/tables/events/files").raise_for_status().json()["files"]
        # Row ids come from the catalog's file -> first_row_id map; the row *values* come from pyarrow.
        parts = []
        for f in sorted(files, key=lambda f: f["first_row_id"]):
            part = ds.dataset(f["path"], format="parquet").to_table().to_pandas()
            part.index = range(f["first_row_id"], f["first_row_id"] + len(part))
            parts.append(part)
        df = pd.concat(parts)
        assert len(df) == ROWS
        yield Service(url=url, token=TOKEN, source=source, df=df, http=http)


# Module scope: while Playwright's sync API is open its event loop counts as running in the main thread, so a
# later test on the same worker calling asyncio.run() would fail; each browser module starts its own.
@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: install Debian's chromium (scripts/setup.sh --with-browser)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser, service: Service) -> Iterator[object]:
    """A fresh tab (fresh sessionStorage) on the dashboard, token entered through the page's own prompt."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    pg.goto(f"{service.url}/dashboard")
    pg.locator("#token-panel").wait_for(state="visible")
    pg.fill("#token-input", service.token)
    pg.click("#token-form button[type=submit]")
    pg.locator("#tables .table-card[data-table=events]").wait_for()
    try:
        yield pg
    finally:
        context.close()

