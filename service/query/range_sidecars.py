"""Range sidecars of the index files a query reads: opened beside the file, or derived in the background into
the warehouse. Query-side, not web: the API's query service holds one; must not import fastapi.

A bgix build writes the sidecar beside each index file (the snapshot records its size). For files bgix did
not build (Paimon tables, other writers, older bgix builds) the first range query that could use one
starts deriving it from the bitmap file on a background thread, into the warehouse's `_sidecars/` (keyed by
the index file's path and size, never inside a Paimon table); that query and the next ones are answered
from the bitmap file until it is there. Several server processes may race to derive the same sidecar:
`write_if_absent` keeps one. Opened sidecars are kept in a byte-budgeted LRU (per process).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from index_format import range_bitmap
from index_format.global_index.reader import IndexReader
from index_format.lru import ByteLRU
from index_format.range_bitmap import RangeBitmapReader
from index_format.sidecar import SIDECAR_SUFFIX
from index_format.sidecar.derive import MAX_ROWS, derive_sidecar
from index_format.storage import Storage
from index_format.types import KeyType
from service.catalog import warehouse_layout

log = logging.getLogger("bgix.sidecars")

SidecarOpener = Callable[[], RangeBitmapReader | None]


class SidecarHooks:
    """IndexFileRef.open_sidecar and .sidecar_failed of one index file."""

    def __init__(self, open_sidecar: SidecarOpener, failed: Callable[[Exception], None],
                 peek: SidecarOpener) -> None:
        self.open = open_sidecar
        self.peek = peek
        self.failed = failed


class Sidecars:
    """Opens and derives range sidecars; `opener()` gives the IndexFileRef.open_sidecar of one file."""

    def __init__(self, storage: Storage, budget: int, *, derive: bool = True, max_open: int | None = None) -> None:
        self.storage = storage
        self.derive_enabled = derive
        self.readers: ByteLRU[RangeBitmapReader] = ByteLRU(budget, lambda r: r.memory_bound(planes=r.planes),
                                                           max_entries=max_open)
        self._lock = threading.Lock()
        self._pending: set[tuple[str, int]] = set()    # being derived now
        self._failed: dict[tuple[str, int], str] = {}   # could not be derived (corrupt file): not retried
        self._absent_beside: set[tuple[str, int]] = set()
        self._pool: ThreadPoolExecutor | None = None
        self.derived = 0

    def opener(self, path: str, size: int, kt: KeyType, row_count: int, *, beside_size: int | None,
               chunk_size: int, enabled: bool, open_index: Callable[[], IndexReader]) -> SidecarHooks | None:
        """The sidecar hooks of one index file, or None when it cannot have one (option off, type, size)."""
        if not enabled or not range_bitmap.supports(kt) or not 0 < row_count <= MAX_ROWS:
            return None
        resolved: list[str] = []

        def key_of() -> tuple[str, int]:
            if not resolved:   # once per hooks: resolving checks the roots
                resolved.append(self.storage.resolve(path))
            return resolved[0], size

        def open_sidecar() -> RangeBitmapReader | None:
            key = key_of()
            hit = self.readers.get(key)
            if hit is not None:
                return hit
            if beside_size is not None and key not in self._absent_beside:
                reader = self._open(resolved[0] + SIDECAR_SUFFIX, beside_size, kt)
                if reader is not None:
                    self._keep(key, reader)
                    return reader
                self._absent_beside.add(key)  # removed by hand: derive one instead
            return self._derived(key, kt, row_count, chunk_size, open_index)

        def failed(exc: Exception) -> None:
            # broken beyond its header: never use it again in this process (the bitmap file answers)
            if resolved:
                key = (resolved[0], size)
                log.warning("range sidecar of %s is broken, using the bitmap file: %s", key[0], exc)
                with self._lock:
                    self._failed[key] = str(exc)
                    self._absent_beside.add(key)
                self.readers.discard_prefix(key[0])

        def peek() -> RangeBitmapReader | None:
            # the hooks of another view of this file (a newer snapshot, a count after a range) may have
            # opened it: the cache is keyed by the resolved path
            return self.readers.get(key_of())

        return SidecarHooks(open_sidecar, failed, peek)

    def _derived(self, key: tuple[str, int], kt: KeyType, row_count: int, chunk_size: int,
                 open_index: Callable[[], IndexReader]) -> RangeBitmapReader | None:
        with self._lock:
            if key in self._pending or key in self._failed:
                return None
        target = warehouse_layout.derived_sidecar(*key)
        try:
            size = self.storage.size(target)
        except FileNotFoundError:
            size = None
        if size is not None:
            reader = self._open(self.storage.resolve(target), size, kt)
            if reader is not None:
                self._keep(key, reader)
                return reader
        if not self.derive_enabled:
            return None
        with self._lock:
            if key in self._pending or key in self._failed:
                return None
            self._pending.add(key)
            if self._pool is None:
                # one derivation at a time: each reads a whole index file
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bgix-sidecar")
            pool = self._pool
        pool.submit(self._derive, key, target, kt, row_count, chunk_size, open_index)
        return None

    def _derive(self, key: tuple[str, int], target: str, kt: KeyType, row_count: int, chunk_size: int,
                open_index: Callable[[], IndexReader]) -> None:
        try:
            data = derive_sidecar(open_index(), row_count, chunk_size=chunk_size)
            if data is not None:
                self.storage.write_if_absent(target, data)   # another process may have won: same bytes
                self.derived += 1
        except Exception as exc:  # a corrupt index file: queries keep using (and reporting) the bitmap file
            log.warning("cannot derive a range sidecar for %s: %s", key[0], exc)
            with self._lock:
                self._failed[key] = str(exc)
        finally:
            with self._lock:
                self._pending.discard(key)

    def _keep(self, key: tuple[str, int], reader: RangeBitmapReader) -> None:
        """Cache an opened sidecar at what it may grow to. Dense planes only when they fit the budget: a
        sidecar the cache cannot keep is opened again per query, and would rebuild its planes every time."""
        cost = reader.memory_bound(planes=True)
        if cost > self.readers.budget:
            reader.planes = False
            cost = reader.memory_bound(planes=False)
        self.readers.put(key, reader, cost)

    def _open(self, full: str, size: int, kt: KeyType) -> RangeBitmapReader | None:
        try:
            reader = RangeBitmapReader(self.storage.open_source(full, size), kt)
            reader.cardinality  # noqa: B018 — reads the header now, so a broken file is found here
            return reader
        except FileNotFoundError:
            return None
        except Exception as exc:  # a broken sidecar never breaks a query: the bitmap file answers
            log.warning("ignoring unreadable range sidecar %s: %s", full, exc)
            return None

    def discard_prefix(self, prefix: str) -> None:
        self.readers.discard_prefix(prefix)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
