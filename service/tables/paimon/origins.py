"""Who wrote each bitmap global index file of a Paimon snapshot: bgix, Paimon (Java) or pypaimon; and when an
index was built (index_built_at: the commit that added its newest file).

The rule, first match wins:

- "bgix": the file was added by a snapshot whose properties carry `bgix.job-id` (bgix commits its files
  that way, commit.py); the job id is that property. "Added" = in that snapshot's index manifest and not
  in its predecessor's.
- "paimon": its source_meta is the DEIX marker (magic 0x44454958: Paimon Java, or any other DEIX writer,
  bgix included when the snapshot that added the file has expired).
- "pypaimon": no source_meta (pypaimon 2.1's create_global_index writes none).
- "unknown": some other source_meta.

The work is bounded: bgix always writes the DEIX marker, and it commits after the snapshot the marker names
as scanned, so only snapshots in (scanned, scanned + WINDOW] are looked at, only for DEIX files, and an
index manifest is diffed only for snapshots carrying `bgix.job-id`. Snapshots are immutable, so what each
one added is cached per (table directory, snapshot id) in an OriginsCache its owner keeps (the Paimon
source shared by a service's views; a fresh one per call otherwise).

When: an index's files are listed by every snapshot from the one that added its newest file on (file names are
unique: a file removed never comes back), so that snapshot is the earliest listing them all, found by a binary
search over the snapshots kept (log2 of their number in index manifest reads; none for a snapshot whose index
manifest is the pinned one's). Its commit time is the index's build time, whatever data commits came after.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from index_format.global_index.filemeta import deix_scan_snapshot
from index_format.lru import ByteLRU
from service.tables.paimon.index_entries import GlobalIndexEntry, index_file_names
from service.tables.paimon.table import PaimonTable
from service.tables.table_summary import IndexWriter

if TYPE_CHECKING:
    from pypaimon.snapshot.snapshot import Snapshot

__all__ = ["BGIX_JOB_PROPERTY", "ORIGINS", "WINDOW", "IndexOrigin", "OriginsCache", "file_origins", "index_built_at"]

log = logging.getLogger("bgix.paimon.origins")
BGIX_JOB_PROPERTY = "bgix.job-id"
ORIGINS = ("bgix", "paimon", "pypaimon", "unknown")
WINDOW = 64            # snapshots after the scanned one where a writer's commit may land (races, retries)
_CACHE_SIZE = 4096     # (table, snapshot) entries; one small record each


@dataclass(frozen=True, slots=True)
class IndexOrigin:
    """The writer of one index file; for bgix also its build job and the snapshot that committed the file."""

    writer: IndexWriter           # one of ORIGINS
    job_id: str | None = None
    snapshot_id: int | None = None


@dataclass(frozen=True, slots=True)
class _Commit:
    """What one snapshot did, as far as origins care: its commit time, bgix job (None: not bgix's), additions."""

    time_millis: int
    job_id: str | None
    added: frozenset[str]


class OriginsCache:
    """What each snapshot committed, per (table directory, snapshot id), the `size` most recently used (an
    index_format.lru.ByteLRU whose entries cost 1 each); thread-safe."""

    def __init__(self, size: int = _CACHE_SIZE) -> None:
        self.size = size
        self._commits: ByteLRU[_Commit] = ByteLRU(size)
        # (table directory, index file names) → when the snapshot that added the newest of them was committed
        # (epoch seconds; None: that snapshot has expired). Fixed once known: names are never reused.
        self.built: ByteLRU[float | None] = ByteLRU(size)

    def get(self, key: tuple[str, int]) -> _Commit | None:
        return self._commits.get(key)

    def put(self, key: tuple[str, int], commit: _Commit) -> None:
        self._commits.put(key, commit, 1)

    def forget_if_recreated(self, table: PaimonTable) -> None:
        """A table dropped and created again at the same directory reuses snapshot ids: when the pinned
        snapshot's commit time differs from the cached one, that directory's cached snapshots are stale."""
        sid, snap = table.snapshot_id, table.snapshot
        assert sid is not None and snap is not None
        hit = self._commits.get((table.table_path, sid))
        if hit is not None and hit.time_millis != int(snap.time_millis):
            self._commits.discard_where(lambda key: key[0] == table.table_path)


def file_origins(table: PaimonTable,
                 entries: Mapping[str, Sequence[GlobalIndexEntry]] | Mapping[tuple[str, str], Sequence[GlobalIndexEntry]],
                 cache: OriginsCache | None = None) -> dict[str, IndexOrigin]:
    """file name → IndexOrigin for every entry (index files of `table`'s pinned snapshot, grouped by column or by
    (column, index type) as list_index_entries / list_all_index_entries give them); `cache` keeps
    what snapshots committed across calls (None: a fresh one)."""
    cache = OriginsCache() if cache is None else cache
    files = [e for group in entries.values() for e in group]
    scans = {s for s in (deix_scan_snapshot(e.source_meta) for e in files) if s is not None}
    by_bgix: dict[str, IndexOrigin] = {}
    if scans and table.snapshot is not None:
        try:
            by_bgix = _bgix_additions(table, scans, cache)
        except Exception:  # origins only label files: an unreadable old snapshot must not hide the table
            log.warning("could not read the snapshots that added %s's index files; labelling them by their "
                        "source_meta", table.location.identifier, exc_info=True)
    out = {}
    for e in files:
        if e.file_name in by_bgix:
            out[e.file_name] = by_bgix[e.file_name]
        elif deix_scan_snapshot(e.source_meta) is not None:
            out[e.file_name] = IndexOrigin("paimon")
        else:
            out[e.file_name] = IndexOrigin("pypaimon" if e.source_meta is None else "unknown")
    return out


def _bgix_additions(table: PaimonTable, scans: set[int], cache: OriginsCache) -> dict[str, IndexOrigin]:
    current = table.snapshot_id
    assert current is not None
    candidates = sorted({sid for s in scans for sid in range(max(s + 1, 1), min(s + WINDOW, current) + 1)})
    cache.forget_if_recreated(table)
    out: dict[str, IndexOrigin] = {}
    for sid in candidates:
        commit = _commit(table, sid, cache)
        if commit is not None and commit.job_id is not None:
            for name in commit.added:
                out[name] = IndexOrigin("bgix", commit.job_id, sid)
    return out


def _commit(table: PaimonTable, sid: int, cache: OriginsCache) -> _Commit | None:
    key = (table.table_path, sid)
    hit = cache.get(key)
    if hit is not None:
        return hit
    manager = table.table.snapshot_manager()
    snap = table.snapshot if sid == table.snapshot_id else manager.get_snapshot_by_id(sid)
    if snap is None:          # expired: its files fall back to their source_meta
        return None
    job = (snap.properties or {}).get(BGIX_JOB_PROPERTY)
    added: frozenset[str] = frozenset()
    if job is not None:       # only bgix's snapshots are worth two index manifest reads
        before = manager.get_snapshot_by_id(sid - 1) if sid > 1 else None
        added = index_file_names(table, snap) - index_file_names(table, before)
    commit = _Commit(int(snap.time_millis), None if job is None else str(job), added)
    cache.put(key, commit)
    return commit



def index_built_at(table: PaimonTable, names: frozenset[str], cache: OriginsCache | None = None,
                   expired: Callable[[], float | None] | None = None) -> float | None:
    """When the index made of the files `names` (listed by `table`'s pinned snapshot) was built: the commit time
    (epoch seconds) of the earliest snapshot listing them all, the one that added the newest (module docstring).
    When that snapshot has expired (the earliest one kept lists them all already, and has a predecessor):
    `expired()` (kept in the cache too: it is asked once per set of files), else None. None when the snapshots do
    not read."""
    cache = OriginsCache() if cache is None else cache
    current = table.snapshot
    if not names or current is None or table.snapshot_id is None:
        return None
    key = (table.table_path, names)
    if key in cache.built:
        return cache.built.get(key)
    try:
        found = _first_listing(table, names, current, table.snapshot_id)
    except Exception:  # only a label: an unreadable old snapshot must not hide the table
        log.warning("could not read the snapshots that added %s's index files", table.location.identifier,
                    exc_info=True)
        return None
    if found is not None:
        built: float | None = int(found.time_millis) / 1000.0
    else:
        built = expired() if expired is not None else None
    cache.built.put(key, built, 1)
    return built


def _first_listing(table: PaimonTable, names: frozenset[str], current: Snapshot, current_id: int) -> Snapshot | None:
    manager = table.table.snapshot_manager()
    earliest = manager.try_get_earliest_snapshot(current_id)
    snaps: dict[int, Snapshot | None] = {current_id: current}

    def listed(sid: int) -> bool:
        if sid not in snaps:
            snaps[sid] = manager.get_snapshot_by_id(sid)
        snap = snaps[sid]
        if snap is None:           # expired while we looked: it lists nothing we can tell
            return False
        if snap.index_manifest == current.index_manifest:
            return True
        return snap.index_manifest is not None and names <= index_file_names(table, snap)

    lo, hi = int(earliest.id), current_id
    if listed(lo):
        # the first snapshot ever added them; a later earliest one only says the one that did has expired
        return snaps[lo] if lo == 1 else None
    while hi - lo > 1:            # listed(hi) and not listed(lo)
        mid = (lo + hi) // 2
        if listed(mid):
            hi = mid
        else:
            lo = mid
    return snaps[hi]
