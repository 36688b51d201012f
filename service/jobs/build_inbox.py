"""The hand-off between the service and its build runners: a directory of job specs, cancel markers and the
runner's state, the only channel between them (service.server.job_runner writes, service.build_job.build_runner
reads).

    inbox/<job>.json    a spec waiting for a runner (written whole under a temporary name, then renamed in)
    claimed/<job>.json  a spec a runner took (renamed there; deleted when its build ends: specs may hold
                        storage credentials)
    cancel/<job>        a cancel request
    state.json          the runner's {"pid", "state", "master", "builds", "running", "error"}

Files on this host's disk, never warehouse data; spec files are readable by their owner only.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

# Runner states as state.json names them
STARTING, READY, WARM, FAILED, STOPPED = "starting", "ready", "warm", "failed", "stopped"


class BuildInbox:
    """One runner directory (created on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.inbox, self.claimed, self.cancels = root / "inbox", root / "claimed", root / "cancel"
        for d in (self.inbox, self.claimed, self.cancels):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)

    # ---- the service's side -----------------------------------------------------------------------
    def put_spec(self, job_id: str, spec_json: str) -> None:
        """Hand a spec to the runners: whole or not at all (they only read `*.json`)."""
        tmp = self.inbox / f".{job_id}.tmp"
        write_private(tmp, spec_json)
        os.replace(tmp, self.inbox / f"{job_id}.json")

    def request_cancel(self, job_id: str) -> None:
        (self.cancels / job_id).touch()

    def waiting(self) -> list[str]:
        """Jobs whose spec no runner has taken yet."""
        return [p.stem for p in self.inbox.glob("*.json")]

    def is_waiting(self, job_id: str) -> bool:
        return (self.inbox / f"{job_id}.json").exists()

    def withdraw(self, job_id: str, *, cancel: bool = True) -> None:
        """Forget a job's spec files (its build ended, or it was never started) and, unless `cancel` is False, its
        cancel request (the service leaves that to the runner, which may not have seen it yet)."""
        for path in (self.inbox / f"{job_id}.json", self.claimed / f"{job_id}.json"):
            path.unlink(missing_ok=True)
        if cancel:
            (self.cancels / job_id).unlink(missing_ok=True)

    def state(self) -> dict[str, Any] | None:
        """What the last runner wrote of itself (None: no runner has run here)."""
        try:
            doc = json.loads((self.root / "state.json").read_text())
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    # ---- the runner's side ------------------------------------------------------------------------
    def specs(self) -> list[Path]:
        """Waiting specs, oldest first."""
        found = []
        for p in self.inbox.glob("*.json"):
            try:
                found.append((p.stat().st_mtime_ns, p.name, p))
            except FileNotFoundError:   # taken by another runner meanwhile
                continue
        return [p for _, _, p in sorted(found)]

    def claim(self, spec: Path) -> Path | None:
        """Take a waiting spec (None: another runner took it first)."""
        claimed = self.claimed / spec.name
        try:
            os.replace(spec, claimed)
        except FileNotFoundError:
            return None
        return claimed

    def cancel_requests(self) -> list[str]:
        try:
            return [p.name for p in self.cancels.iterdir()]
        except FileNotFoundError:   # the service removed its directory on the way out
            return []

    def write_state(self, doc: dict[str, Any]) -> None:
        tmp = self.root / f".state.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, self.root / "state.json")


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (job specs may hold storage credentials)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
