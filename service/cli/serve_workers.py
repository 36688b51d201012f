"""The supervisor of `bgix serve --workers N`: N uvicorn processes, each on its own listening socket.

Every worker gets its own SO_REUSEPORT socket bound to the same address, so the kernel spreads new
connections over the workers. (With one shared socket, whichever worker woke first accepted a whole burst
of connections: 8 keep-alive clients landed 7 on one worker and the second worker idled.) The sockets are
TCP-protocol sockets, on which asyncio turns Nagle off (on a protocol-0 socket every POST answer waited
~40 ms for a delayed ACK). A worker that dies is replaced on its own socket (connections queued on it are
then served); SIGINT / SIGTERM stop them all. Imports uvicorn only in the workers.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.cli.slow_clients import ClientLimits

log = logging.getLogger("bgix.serve")

_APP = "service.api.worker_app:create_worker_app"
_STOP_GRACE_S = 20.0


def listening_sockets(host: str, port: int, n: int) -> list[socket.socket]:
    """`n` TCP listening sockets on (host, port) with SO_REUSEPORT; port 0 picks one free port for all."""
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    out: list[socket.socket] = []
    try:
        for _ in range(n):
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(address if not out else out[0].getsockname())
            sock.listen(2048)
            sock.set_inheritable(True)
            out.append(sock)
    except OSError:
        for sock in out:
            sock.close()
        raise
    return out


def _worker(sock: socket.socket, options: dict[str, Any],
            limits: ClientLimits | None = None) -> None:  # pragma: no cover - runs in a child
    import uvicorn

    from service.cli.slow_clients import install

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the supervisor decides when to stop (SIGTERM)
    from service.server.gc_tuning import tune_for_serving

    tune_for_serving()   # before the app: its factory runs inside uvicorn's loop
    if limits is not None:   # header / body timeouts and the connection cap (service.cli.slow_clients)
        options = {**options, "http": install(limits)}
    config = uvicorn.Config(_APP, factory=True, **options)
    uvicorn.Server(config).run(sockets=[sock])


def supervise(host: str, port: int, workers: int, options: dict[str, Any],
              limits: ClientLimits | None = None) -> None:
    """Run `workers` processes until SIGINT/SIGTERM; a dead one is started again on its socket. `limits`:
    each worker's client limits (service.cli.slow_clients; None: uvicorn's protocol as it is)."""
    sockets = listening_sockets(host, port, workers)
    ctx = multiprocessing.get_context("spawn")
    procs: list[Any] = [None] * workers
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        bound = sockets[0].getsockname()
        host_text = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        log.info("serving on http://%s:%s with %s workers", host_text, bound[1], workers)
        while not stopping:
            for i, sock in enumerate(sockets):
                p = procs[i]
                if p is None or not p.is_alive():
                    if p is not None:
                        log.warning("worker %s exited with code %s: starting another", p.pid, p.exitcode)
                    procs[i] = ctx.Process(target=_worker, args=(sock, options, limits), name=f"bgix-worker-{i}")
                    procs[i].start()
            time.sleep(0.2)
    finally:
        for p in procs:
            if p is not None and p.is_alive():
                os.kill(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_S
        for p in procs:
            if p is not None:
                p.join(max(0.0, deadline - time.monotonic()))
                if p.is_alive():
                    p.kill()
                    p.join(5)
        for sock in sockets:
            sock.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
