"""The README's commands, run as written: a README line that is not true fails here.

The Quick start's demo command runs with `--no-serve --quick` (local build engine, a temporary warehouse and a
free port, so the test stays bounded and leaves the tree clean; the Spark demo is tests/e2e/test_demo.py), and its
printed output must have the README's demo output's lines (numbers, ids and paths aside). Then every `curl` line of
the README's bash blocks runs against a real `bgix serve` on a free loopback port over that warehouse, with a
pypaimon-rust Paimon table `orders` (status, flag, uid, tags; status and flag indexed by pypaimon-rust) for the
examples that name it: each must answer 2xx
with JSON holding the keys its `# …` comment documents.
"""
from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.api.helpers import wait_job
from tests.browser.conftest import running_service
from tests.e2e.conftest import free_port
from tests.unit.tables.paimon import rust_tables as rt

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
HOST = "localhost:8000"                       # as the README writes it
ORDERS_LOCATION = "/data/warehouse/shop.db/orders"
JOB_PLACEHOLDER = "ac8ecf48…"
# Progress lines differ from run to run (how many polls saw the job queued or running); the last one is kept.
PROGRESS = re.compile(r"^\s*(queued|running)\s")


# ---- reading the README --------------------------------------------------------------------------------------
def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def section(text: str, heading: str) -> str:
    """The text under a `## heading`, up to the next `## `."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def commands(block: str) -> list[tuple[str, str]]:
    """Each shell command of a block (continuation lines and here-documents joined) with the `# …` comment that
    documents its answer: on the command's own line, or the comment lines right after it."""
    out: list[tuple[str, str]] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.lstrip().startswith("#"):
            if out:   # a comment line after a command documents that command's answer
                cmd, doc = out[-1]
                out[-1] = (cmd, f"{doc} {line.strip()[1:].strip()}".strip())
            i += 1
            continue
        cmd = [line]
        while cmd[-1].rstrip().endswith("\\"):
            i += 1
            cmd.append(lines[i])
        heredoc = re.search(r"<<'?(\w+)'?", cmd[-1])
        if heredoc:
            while lines[i + 1].strip() != heredoc.group(1):
                i += 1
                cmd.append(lines[i])
            i += 1
            cmd.append(lines[i])
        text = "\n".join(cmd)
        # the comment on the command's last line (outside quotes: the README's are after two spaces)
        doc = ""
        first_line = cmd[0] if heredoc else cmd[-1]
        m = re.search(r"\s{2,}#\s*(.*)$", first_line)
        if m:
            doc = m.group(1)
        out.append((text, doc))
        i += 1
    return out


def documented_keys(doc: str) -> list[str]:
    """The JSON keys a comment promises: its `"key":` parts, or every name of a bare list like
    `state, progress {fraction, rows_indexed, ranges_done}, error`; prose promises nothing here."""
    quoted = re.findall(r'"(\w+)":', doc)
    if quoted:
        return quoted
    if "," in doc and re.fullmatch(r"[\w\s,{}]+", doc):
        return re.findall(r"\w+", doc)
    return []


def all_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in all_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in all_keys(v)}
    return set()


def shape(line: str) -> str:
    """A printed line without what differs between runs: numbers, ids, paths, ports, column padding."""
    line = re.sub(r"\b[0-9a-f]{32}\b", "ID", line)
    line = re.sub(r"(?<!\S)(https?://|\.{0,3}/)\S*", "PATH", line)
    line = re.sub(r"\d[\d,]*(\.\d+)?", "N", line)
    return re.sub(r"\s+", " ", line).strip()


def readme_demo_output() -> list[str]:
    quick = section(README, "Quick start")
    block = re.search(r"```\n(\[1/5\].*?)```", quick, flags=re.S)
    assert block, "the Quick start shows no demo output"
    return [ln for ln in block.group(1).splitlines() if ln.strip()]


# ---- the run ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    quick = bash_blocks(section(README, "Quick start"))
    demo_cmd = next(c for block in quick for c, _ in commands(block) if "demo" in c)
    assert demo_cmd.split("#")[0].split() == ["bash", "scripts/demo.sh"], demo_cmd
    wh = tmp_path_factory.mktemp("readme") / "warehouse"
    argv = ["bash", "scripts/demo.sh", "--no-serve", "--quick", "--engine", "local",
            "--warehouse", str(wh), "--port", str(free_port())]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{argv} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return {"warehouse": wh, "stdout": proc.stdout}


@pytest.fixture(scope="module")
def served(demo: dict[str, Any]) -> Iterator[dict[str, Any]]:
    wh: Path = demo["warehouse"]
    paimon = wh.parent / "shop"
    orders = rt.create_table(paimon, "orders", "status STRING, flag BOOLEAN, uid BIGINT, tags ARRAY<STRING>")
    n = 3_000
    rt.append(paimon, "orders", pa.table({
        "status": pa.array([["ok", "error", "timeout", None][i % 4] for i in range(n)]),
        "flag": pa.array([i % 3 == 0 for i in range(n)]),
        "uid": pa.array(range(n), pa.int64()),
        "tags": pa.array([[["vip"], ["trial", "vip"], [], None][i % 4] for i in range(n)], pa.list_(pa.string())),
    }))
    for column in ("status", "flag"):   # the README queries them: indexes another writer (pypaimon-rust) built
        rt.create_index(paimon, "orders", column, "bitmap")
    with running_service(wh) as (url, http):
        yield {"url": url, "http": http, "orders": orders}


def run_curl(served: dict[str, Any], cmd: str, job_id: str | None) -> tuple[int, Any]:
    # 127.0.0.1, not localhost: the test's server listens on IPv4 loopback only
    text = cmd.replace(HOST, served["url"].removeprefix("http://")).replace(ORDERS_LOCATION, str(served["orders"]))
    if JOB_PLACEHOLDER in text:
        assert job_id, "the README reads a job before it starts one"
        text = text.replace(JOB_PLACEHOLDER, job_id)
    # -w prints the status after the body (the README's commands are otherwise run exactly as written)
    proc = subprocess.run(["bash", "-c", text.replace("curl -s", "curl -s -w '\\n%{http_code}'", 1)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, (cmd, proc.stderr)
    body, _, status = proc.stdout.rpartition("\n")
    if re.search(r"/log\s*(#|$)", cmd):   # a job's log is plain text
        return int(status), body
    return int(status), json.loads(body)


def test_the_demo_prints_what_the_readme_shows(demo: dict[str, Any]) -> None:
    ours = [ln for ln in readme_demo_output() if not PROGRESS.match(ln)]
    printed = [ln for ln in demo["stdout"].splitlines() if ln.strip() and not PROGRESS.match(ln)]
    assert [shape(ln) for ln in ours] == [shape(ln) for ln in printed], "\n".join(printed)
    # rows indexed are counted per column, and the line says so
    assert any(re.search(r"rows indexed 600,000 \(200,000 rows × 3 columns\)", ln) for ln in printed), printed


def test_every_curl_example_answers_as_documented(served: dict[str, Any]) -> None:
    http = served["http"]
    examples = [(c, d) for block in bash_blocks(README) for c, d in commands(block) if c.startswith("curl")]
    assert len(examples) >= 10, examples
    job_id = None
    for cmd, doc in examples:
        status, body = run_curl(served, cmd, job_id)
        if isinstance(body, str):   # GET /v1/jobs/{id}/log of the build just run: its own log lines
            assert status == 200 and job_id and job_id in body, (cmd, status, body[-2000:])
            continue
        assert 200 <= status < 300 and not body.get("error"), (cmd, status, body)
        missing = [k for k in documented_keys(doc) if k not in all_keys(body)]
        assert not missing, (cmd, doc, body)
        if "/v1/create_global_index" in cmd:
            job_id = body["job_id"]
            assert wait_job(http, job_id)["state"] == "succeeded"
        if "/v1/tables/orders/query" in cmd or "/v1/tables/events/query" in cmd:
            assert isinstance(body["count"], int) and body["exact"] is True, (cmd, body)
        if re.search(r"/indexes/\w+/values", cmd):
            prefix = re.search(r"prefix=(\w+)", cmd)
            assert body["values"] and all(str(v["value"]).startswith(prefix.group(1) if prefix else "")
                                          for v in body["values"]), body
        if re.search(r"/v1/tables/orders/indexes\s", cmd):
            pairs = [(i["column"], i["index_type"]) for i in body["indexes"]]
            assert len(pairs) == len(set(pairs)) and {("uid", "btree"), ("tags", "multivalue")} <= set(pairs)
        if re.search(r"localhost:8000/v1/tables/orders\s", cmd + " ") and "-X" not in cmd:
            p = body["paimon"]
            assert p["snapshot_id"] >= 1 and all("id" in f for f in p["fields"]) and "indexes" in p
            assert "partition_keys" in p
