"""Soak a real `bgix serve` (issue 24): mixed valid / refused / malformed queries, registrations and builds
while pypaimon and pypaimon-rust commit to the Paimon table it serves; prints the report as JSON.

    .venv/bin/python bench/bench_soak.py --minutes 5 [--workers 2] [--clients 2] [--engine local|spark]

The driver and its oracle (pyarrow over the source rows, pypaimon's read at each answer's snapshot) are
tests/e2e/soak_driver.py; tests/e2e/test_soak.py runs the same for 45 s in CI.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.soak_driver import run_soak  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--engine", choices=("local", "spark"), default="local")
    ap.add_argument("--seed", type=int, default=24)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bgix-soak-", dir="/work/bench-tmp" if Path("/work/bench-tmp").is_dir()
                                     else None) as tmp:
        report = run_soak(Path(tmp), args.minutes * 60, workers=args.workers, clients=args.clients,
                          seed=args.seed, build_engine=args.engine)
    summary = report.summary()
    summary["growth_after_warmup"] = {k: {str(p): v for p, v in d.items()} for k, d in report.growth().items()}
    summary["first_problems"] = (report.server_errors + report.wrong + report.failed_jobs + report.writer_errors)[:5]
    print(json.dumps(summary, indent=1, default=str))
    return 0 if not summary["first_problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
