"""Every Prometheus metric of the service, defined once on a per-app CollectorRegistry.

No module-level registry or metric objects: `Metrics()` is built in `create_app()` so several apps
(tests) can live in one process. Must not import fastapi or pyspark.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

JOB_STATES = ("queued", "running", "succeeded", "failed", "cancelled")
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0)


class _JobStateCollector(Collector):
    """Reads job counts by state at scrape time, so the gauge never drifts from the catalog."""

    def __init__(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("bgix_jobs", "Build jobs by state", labels=["state"])
        try:
            counts = self._counts()
        except Exception:  # a scrape must not fail because the catalog is briefly unreadable
            counts = {}
        for state in JOB_STATES:
            family.add_metric([state], float(counts.get(state, 0)))
        yield family


class Metrics:
    """The service's metrics; `render()` is the /metrics body."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.request_latency = Histogram(
            "bgix_request_duration_seconds", "HTTP request latency by route template",
            ["method", "route", "status"], buckets=LATENCY_BUCKETS, registry=r)
        self.cache_hits = Counter("bgix_cache_hits", "Reader cache hits", registry=r)
        self.cache_misses = Counter("bgix_cache_misses", "Reader cache misses", registry=r)
        self.cache_hit_ratio = Gauge("bgix_cache_hit_ratio", "Reader cache hits / lookups", registry=r)
        self.cache_bytes = Gauge("bgix_cache_bytes", "Bytes held by the reader and decoded-bitmap caches", registry=r)
        self.bytes_read = Counter("bgix_index_bytes_read", "Bytes read from index files", registry=r)
        self.corrupt_files = Counter("bgix_corrupt_index_files", "Corrupt index file errors", registry=r)
        self._lock = threading.Lock()
        self._lookups = [0, 0]  # hits, misses: the ratio gauge without reading counter internals
        self.queries = Counter("bgix_queries", "Queries answered by result kind", ["result"], registry=r)
        self.scanned_rows = Counter("bgix_scanned_rows", "Data rows read to answer what no index covers or answers "
                                    "(exact by scan)", registry=r)

    def watch_jobs(self, counts: Callable[[], Mapping[str, int]]) -> None:
        """Expose job counts by state, read from `counts` at every scrape."""
        self.registry.register(_JobStateCollector(counts))

    def record_cache(self, hit: bool) -> None:
        (self.cache_hits if hit else self.cache_misses).inc()
        with self._lock:
            self._lookups[0 if hit else 1] += 1
            hits, misses = self._lookups
        self.cache_hit_ratio.set(hits / (hits + misses))

    def render(self) -> bytes:
        return generate_latest(self.registry)
