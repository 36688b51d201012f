"""The README's dashboard screenshot, taken from the demo's Paimon table (docs/screenshots/dashboard-demo.png).

Run after `bash scripts/demo.sh --no-serve` (it leaves ./warehouse with the demo table and its indexes):
    .venv/bin/python scripts/dashboard_screenshot.py [--warehouse ./warehouse] [--out docs/screenshots/dashboard-demo.png]
It starts `bgix serve` on a free loopback port over that warehouse, opens the dashboard in Debian's headless
Chromium (Playwright, never `playwright install`) at 1400 px, explores one index, runs a query with its explain
figures, and saves a full-page PNG.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
WHERE = "status = 'error' AND country IN ('DE', 'FR')"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", type=Path, default=REPO / "warehouse")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots" / "dashboard-demo.png")
    args = ap.parse_args()
    if not (args.warehouse / "tables" / "events").is_dir():
        print(f"no demo table under {args.warehouse}: run `bash scripts/demo.sh --no-serve` first", file=sys.stderr)
        return 1
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, BGIX_WAREHOUSE=str(args.warehouse.resolve()), BGIX_TOKEN="")
    server = subprocess.Popen([sys.executable, "-c", "from service.cli import main; raise SystemExit(main())",
                               "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
                               "--no-access-log"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/tables", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                print("bgix serve did not start", file=sys.stderr)
                return 1
            time.sleep(0.2)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(30_000)
            page.goto(f"{url}/dashboard")
            page.locator("#tables .table-card[data-table=events] tr[data-column=country] .explore-btn").click()
            page.locator("#top-chart svg .chart-row").first.wait_for()
            page.fill("#query-where", WHERE)
            page.click("#query-run")
            page.locator("#query-result").wait_for(state="visible")
            page.locator("#jobs table").wait_for()
            page.mouse.move(0, 0)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=True)
            browser.close()
        print(f"wrote {args.out}")
        return 0
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
