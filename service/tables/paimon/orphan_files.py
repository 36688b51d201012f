"""Find and remove orphan global index files of a Paimon table: files in its index directory that no snapshot,
tag or branch references and that no live build may still commit.

The safety rule (docs/operations.md "Orphan index files"), every part required before a file goes:

1. It is a global index file (`<type>-global-index-<uuid>.index`, whoever wrote it) or a bgix write's temp file
   (`.tmp-*.part`, named after the file it becomes: index_format.storage.temp_target) directly in the table's
   `index/` directory. Nothing else is ever a candidate: not data files, manifests, deletion-vector or hash
   index files (`index-<uuid>-<n>`), nor anything in subdirectories. In the table's
   `global-index.external-path` (a directory other tables may share) only files of dead bgix builds of this
   table are candidates.
2. No index manifest names it, of any snapshot still present (`snapshot/snapshot-N`, every N), tag
   (`tag/tag-*`), changelog (`changelog/changelog-N`), in the main branch and every `branch/branch-*/` — the
   set Paimon's own OrphanFilesClean keeps. A snapshot that vanishes while being read was expired and is
   skipped; a present one whose index manifest is missing or unreadable stops the cleanup (nothing removed).
   Snapshots committed while the scan runs are scanned too, and once more right before the removal.
3. Its name's job stamp (build_tasks.job_stamp; a temp file's, of the name it becomes) is not that of a live
   bgix build (an in-flight marker naming a running process, or an active job record), as known after the
   directory was listed (a build's marker exists before its first file).
4. Either the stamp is that of a bgix build known to be over (its process gone: it can never commit the file),
   or the file is older than `older_than_s` (default one hour, as Paimon's `older_than`): the guard for files
   bgix cannot attribute, such as another writer's build still in flight.

Paimon metadata is read through pypaimon (snapshot and tag JSON, index manifests); the files are listed, dated
and removed through bgix's Storage.
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping

from pypaimon.common.json_util import JSON
from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pypaimon.snapshot.snapshot import Snapshot

from index_format.storage import Storage
from service.catalog.catalog_errors import CorruptDocumentError
from service.tables.build_tasks import stamp_of_file
from service.tables.paimon.location import to_storage_path
from service.tables.paimon.table import PaimonTable
from service.tables.table_source import OrphanFile, OrphanReport

__all__ = ["DEFAULT_OLDER_THAN_S", "Owners", "OrphanScanError", "find_references", "is_orphan_candidate",
           "remove_orphan_index_files"]

log = logging.getLogger("bgix.paimon.orphans")
DEFAULT_OLDER_THAN_S = 3600.0
_SNAPSHOT = re.compile(r"^snapshot-\d+$")
_CHANGELOG = re.compile(r"^changelog-\d+$")
_TAG_PREFIX = "tag-"
_BRANCH_PREFIX = "branch-"
_TEMP = re.compile(r"^\.tmp-.*\.part$")   # index_format.storage's local write_atomic temp files
_RESCANS = 8                              # listing rounds while new snapshots keep appearing


class OrphanScanError(CorruptDocumentError):
    """A snapshot or tag still present names metadata that cannot be read, so the set of referenced files is not
    known and nothing was removed; `path` names the file."""


def is_orphan_candidate(file_name: str) -> bool:
    """A name the cleanup may consider at all: a global index file or a bgix write's temp file (rule 1)."""
    if _TEMP.match(file_name):
        return True
    return (not file_name.startswith(".") and file_name.endswith(".index") and "-global-index-" in file_name)


class _References:
    """The file names the index manifests of a table's snapshots, tags and changelogs (every branch) name;
    `refresh()` reads what appeared since the last call."""

    def __init__(self, table: PaimonTable, storage: Storage) -> None:
        self.table = table
        self.storage = storage
        self.root = to_storage_path(table.table_path).rstrip("/")
        self.names: set[str] = set()
        self.read: set[str] = set()
        self._manifests: set[str] = set()

    def refresh(self) -> int:
        """Read every metadata file not read yet, until a listing shows none new; returns how many were read."""
        before = len(self.read)
        for _ in range(_RESCANS):
            new = [p for p in self._metadata_files() if p not in self.read]
            if not new:
                return len(self.read) - before
            for path in new:
                self._read_one(path)
                self.read.add(path)
        raise OrphanScanError(f"snapshots of {self.root} kept changing during {_RESCANS} listings; try again",
                              path=self.root)

    def _metadata_files(self) -> list[str]:
        roots = [self.root]
        for path in self.storage.list(f"{self.root}/branch"):
            if path.rstrip("/").rsplit("/", 1)[-1].startswith(_BRANCH_PREFIX):
                roots.append(path.rstrip("/"))
        out = []
        for root in roots:
            for sub, keep in (("snapshot", _SNAPSHOT.match), ("changelog", _CHANGELOG.match),
                              ("tag", lambda n: n.startswith(_TAG_PREFIX))):
                for path in self.storage.list(f"{root}/{sub}"):
                    if keep(path.rstrip("/").rsplit("/", 1)[-1]):
                        out.append(path)
        return out

    def _read_one(self, path: str) -> None:
        try:
            text = self.storage.read_bytes(path).decode("utf-8")
        except FileNotFoundError:
            return   # expired (or a tag deleted) since the listing: it references nothing any more
        except IsADirectoryError:
            return
        try:
            manifest = JSON.from_json(text, Snapshot).index_manifest
        except Exception as exc:
            raise OrphanScanError(f"cannot read Paimon snapshot/tag file {path!r} ({type(exc).__name__}: {exc}); "
                                  "no index file was removed", path=path) from exc
        if not manifest or manifest in self._manifests:
            return
        manifest_path = f"{self.root}/manifest/{manifest}"
        if not self.storage.exists(manifest_path):
            if not self.storage.exists(path):
                return   # expired while we read it
            raise OrphanScanError(f"{path!r} names index manifest {manifest!r}, which is missing; "
                                  "no index file was removed", path=manifest_path)
        try:
            entries = IndexManifestFile(self.table.table).read(manifest)
        except Exception as exc:
            raise OrphanScanError(f"cannot read index manifest {manifest_path!r} ({type(exc).__name__}: {exc}); "
                                  "no index file was removed", path=manifest_path) from exc
        for e in entries:   # every kind and index type: deletion vectors and hash indexes count as referenced too
            meta = e.index_file
            self.names.add(str(meta.file_name))
            if meta.external_path:
                self.names.add(str(meta.external_path).rstrip("/").rsplit("/", 1)[-1])
        self._manifests.add(manifest)


def find_references(table: PaimonTable, storage: Storage) -> frozenset[str]:
    """The names of every index file some snapshot, tag or changelog of `table` (any branch) references.

    Raises:
        OrphanScanError: a present snapshot's or tag's metadata cannot be read.
    """
    refs = _References(table, storage)
    refs.refresh()
    return frozenset(refs.names)


def _index_dirs(table: PaimonTable) -> tuple[str, str | None]:
    """(the table's `index/` directory, the global-index external path when set and elsewhere)."""
    factory = table.table.path_factory().global_index_path_factory()
    own = to_storage_path(str(factory.index_path())).rstrip("/")
    root = to_storage_path(str(factory.global_index_root_path())).rstrip("/")
    return own, (root if root != own else None)


Owners = Callable[[], tuple[Mapping[str, str], Mapping[str, str]]]


def remove_orphan_index_files(table: PaimonTable, storage: Storage, *, owners: Owners,
                              older_than_s: float = DEFAULT_OLDER_THAN_S, dry_run: bool = False,
                              dead_only: bool = False, now: float | None = None) -> OrphanReport:
    """Remove (with `dry_run`: list) the orphan index files of `table` by the module's rule.

    `owners()` → (live, dead): job stamp → job id of bgix builds that may still commit (any table) / that never
    will (builds of THIS table only: another table may share the external index path). It is called after the
    index directories were listed: a build leaves its in-flight marker before its first file, so every build
    with a file in the listing is known by then, however young the file and whatever `older_than_s` (read
    before the listing, a build that started in between would lose its files to a small age guard).
    `dead_only`: remove only files of `dead` builds (the cleanup after a build died or failed), never by age.
    `storage` must reach the table directory (and its external index path); `now` is for tests.

    Raises:
        OrphanScanError: the referenced files cannot be known (nothing is removed then).
        StorageUnavailableError: listing the index directory failed.
    """
    if older_than_s < 0:
        raise ValueError(f"older_than_s must be >= 0, got {older_than_s}")
    refs = _References(table, storage)
    refs.refresh()
    own, external = _index_dirs(table)
    listed = [(directory, anything, storage.list(directory))
              for directory, anything in ((own, True), (external, False)) if directory is not None]
    live, dead = owners()
    clock = time.time() if now is None else now
    chosen: list[OrphanFile] = []
    kept = {"referenced": 0, "in_flight": 0, "young": 0}
    for _directory, anything, paths in listed:
        for path in paths:
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if not is_orphan_candidate(name):
                continue
            if name in refs.names:
                kept["referenced"] += 1
                continue
            stamp = stamp_of_file(name)
            if stamp is not None and stamp in live:
                kept["in_flight"] += 1
                continue
            try:
                size, mtime = storage.stat(path)
            except (FileNotFoundError, IsADirectoryError):
                continue
            age = max(0.0, clock - mtime)
            job = dead.get(stamp) if stamp is not None else None
            if job is not None:
                chosen.append(OrphanFile(path, name, size, age, job, f"bgix build {job} is over and never "
                                                                      "committed it"))
            elif anything and not dead_only and age >= older_than_s and mtime > 0:
                chosen.append(OrphanFile(path, name, size, age, None,
                                         f"unreferenced and older than {older_than_s:g} s"))
            else:
                kept["young"] += 1
    # A writer may have committed one of them while we listed: read what appeared since, keep what it names.
    if chosen:
        refs.refresh()
    final = [f for f in chosen if f.file_name not in refs.names]
    kept["referenced"] += len(chosen) - len(final)
    failed = []
    if not dry_run:
        for f in final:
            try:
                storage.delete(f.path)
            except Exception as exc:
                log.warning("could not remove orphan index file %s: %s", f.path, exc)
                failed.append(f.path)
        if final:
            log.info("removed %d orphan index file(s) (%d bytes) of %s", len(final) - len(failed),
                     sum(f.bytes for f in final if f.path not in failed), refs.root)
    gone = [f for f in final if f.path not in failed]
    return OrphanReport(
        location=refs.root, dry_run=dry_run, older_than_s=older_than_s, removed=tuple(gone),
        kept_referenced=kept["referenced"], kept_in_flight=kept["in_flight"], kept_young=kept["young"],
        failed=tuple(failed), metadata_scanned=len(refs.read))
