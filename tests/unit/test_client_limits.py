"""The connection cap fits under the open-file limit (service.cli.slow_clients.fitted_limits): a low soft limit is
raised towards the hard one to hold the cap and the reader caches' files; a hard limit too low lowers the cap.
Run in a child process, whose limits the test may change freely."""
from __future__ import annotations

import subprocess
import sys

_CODE = """
import resource
from service.cli.slow_clients import fitted_limits
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 4096))
print(fitted_limits(10, 30, 1024, 256).max_connections, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
print(fitted_limits(10, 30, 1024, 256).max_connections, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def test_the_cap_fits_under_the_open_file_limit() -> None:
    out = subprocess.run([sys.executable, "-c", _CODE], capture_output=True, text=True, timeout=60, check=True)
    raised, lowered = out.stdout.split("\n")[:2]
    assert raised == "1024 1536"          # soft limit raised to 1024 + 256 * 1.5 + 128
    assert lowered == "512 1024"          # hard limit 1024: 1024 - 384 - 128 connections
    assert "does not fit under the open-file limit" in out.stderr
