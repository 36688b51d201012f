"""The global index families bgix serves and builds, one entry each: Paimon's `index_type` name, how a file of
the family is opened and written, and which predicate leaves its files answer. A family plugs in here and
nowhere else; the build job, the table sources and the query side look it up by name.

Every family's reader implements index_format.index_reader.IndexReader, the one surface the engine and the
service call. A new family is its package, one FAMILIES entry here and its docs (docs/contracts.md lists them).
Light to import (the API's request schemas and the client read the names): a family's reader and writer
modules load on first use. Never imports the predicate package (capabilities are operator names).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from index_format.errors import InvalidOptionError

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from index_format.index_reader import IndexReader
    from index_format.types import KeyType
    from index_format.written_files import WrittenFile

__all__ = ["BITMAP", "BTREE", "BUILT_NAMES", "FM", "MULTIVALUE", "FAMILIES", "IndexFamily", "RangeStream", "built_family",
           "check_column_type", "check_key_type", "family", "unserved_reason"]


@dataclass(frozen=True, slots=True)
class IndexFamily:
    """One index family.

    `name`: Paimon's `IndexFileMeta.index_type` (the `index_type` of create_global_index).
    `reader`, `writer`: "module:function" of `open_reader(source, kt, *, cache, bitmap_cache)` (an
    index_format.index_reader.IndexReader) and `write_files(keys, local_row_ids, kt, options, *,
    records_per_file, new_path, storage, keep_rows)` (a list of WrittenFile).
    `answers`: the leaf operators (predicate.operators names) its files answer; None means every operator
    (a leaf the family cannot answer is UNSUPPORTED: the engine scans).
    `builds`: bgix writes files of this family (False: served only).
    `seeks`: leaf operators its files answer by seeking in key order rather than scanning every key, so they
    are never held to the fallback-scan budget (spec §6).
    `element_keys`: keys are the elements of an ARRAY column (one file per shard of row ids, spec §8).
    `aligned_ranges`: a Paimon build cuts its row ranges at the multiples of `sorted-index.records-per-range`
    (`_ROW_ID DIV R`, as Java's multivalue and pypaimon-rust's fm builds), not R ids from each piece's start.
    `dense`: its files hold every row id of their range (an fm file's rows are its range's rows, in order):
    rows the build's read does not return (deleted by a deletion vector) are written as nulls, which no answer
    shows (deleted rows are taken out of every answer).
    `sidecars`: bgix may write and use a range sidecar beside its files (same rows, range-bitmap format).
    `key_types`: the KeyType names (index_format.types) its keys may have; None: every scalar type. A build on
    a column of another type is refused before it starts.
    `streamer`: "module:function" of `open_stream(kt, options, *, rows, records_per_file, new_path, storage)`, a
    writer of one range fed as the build reads it (`add(keys, local_row_ids)`, then `finish()` → its files, the
    same as `write_files` of all the rows would write); None: the build gathers a range's rows, then writes them.
    `rank`: preference among families that answer a leaf equally well (lower first).
    `description`: one line for people (the dashboard's hint, GET /v1/index-families).
    """

    name: str
    reader: str
    writer: str
    answers: frozenset[str] | None = None
    builds: bool = True
    seeks: frozenset[str] = frozenset()
    element_keys: bool = False
    aligned_ranges: bool = False
    dense: bool = False
    sidecars: bool = False
    key_types: frozenset[str] | None = None
    streamer: str | None = None
    rank: int = 0
    description: str = ""

    @property
    def open_reader(self) -> Callable[..., IndexReader]:
        """open_reader(source: RangeSource | str, kt: KeyType | str, *, storage=None, size=None, cache=None,
        bitmap_cache=None) -> IndexReader."""
        return cast("Callable[..., IndexReader]", _load(self.reader))

    @property
    def write_files(self) -> Callable[..., list[WrittenFile]]:
        return cast("Callable[..., list[WrittenFile]]", _load(self.writer))

    @property
    def open_stream(self) -> Callable[..., RangeStream] | None:
        return cast("Callable[..., RangeStream]", _load(self.streamer)) if self.streamer else None


class RangeStream(Protocol):
    """A range's writer fed as the build reads (IndexFamily.streamer)."""

    def add(self, keys: pa.Array, local_row_ids: np.ndarray) -> None: ...

    def finish(self) -> list[WrittenFile]: ...


def _load(ref: str) -> object:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


# What a sorted key → row-ids file answers by seeking (Paimon's BTreeIndexReader); the rest of the operator
# table (suffix, infix and LIKE scans) it would answer only as "every non-null row", so it declines them.
_SORTED_OPS = frozenset(("eq", "ne", "in", "not_in", "is_null", "is_not_null", "lt", "le", "gt", "ge",
                         "between", "not_between", "starts_with", "range_set"))
_ARRAY_OPS = frozenset(("array_contains", "arrays_overlap", "array_contains_all"))

BITMAP = IndexFamily(name="bitmap", reader="index_format.global_index.reader:open_index",
                     writer="index_format.global_index.writer:write_index_files", sidecars=True,
                     description="a row bitmap per distinct value; answers every predicate; best for low- and "
                                 "medium-cardinality columns")
BTREE = IndexFamily(name="btree", reader="index_format.btree.btree_reader:open_btree_index",
                    writer="index_format.btree.btree_writer:write_btree_files", answers=_SORTED_OPS,
                    seeks=_SORTED_OPS, rank=1,
                    description="sorted keys → row ids; seeks for =, IN, <, >, BETWEEN, LIKE 'x%', IS [NOT] NULL, "
                                "!= and NOT IN; for high-cardinality columns and ranges")
# Same file format as bitmap, keyed by array elements; Paimon reads it with a fallback budget of 0 (spec §8).
MULTIVALUE = IndexFamily(name="multivalue", reader="index_format.global_index.reader:open_index",
                         writer="index_format.global_index.multivalue_writer:write_multivalue_files",
                         answers=_ARRAY_OPS, element_keys=True, aligned_ranges=True, rank=2,
                         description="a row bitmap per array element (ARRAY columns); answers array_contains, "
                                     "arrays_overlap and array_contains_all; NOT and IS NULL on the array go to a "
                                     "scan")

# Paimon's FM index (STRING columns): substring, prefix, suffix and LIKE searches of the partitions' suffix
# arrays, equality as separator-bounded search, nulls from its null-row vectors. It has no key order, so
# comparisons and ranges are left to other families or the scan.
_FM_OPS = frozenset(("eq", "ne", "in", "not_in", "is_null", "is_not_null", "starts_with", "ends_with", "contains",
                     "like"))
FM = IndexFamily(name="fm", reader="index_format.fm.fm_reader:open_fm_index",
                 writer="index_format.fm.fm_writer:write_fm_files", answers=_FM_OPS, seeks=_FM_OPS, rank=3,
                 key_types=frozenset(("string",)), aligned_ranges=True, dense=True,
                 streamer="index_format.fm.fm_stream:open_fm_stream",
                 description="an FM index (suffix array) over a STRING column; exact LIKE '%x%', contains, "
                             "LIKE 'x%', LIKE '%x' and general LIKE patterns, =, IN, IS [NOT] NULL")

FAMILIES: dict[str, IndexFamily] = {f.name: f for f in (BITMAP, BTREE, MULTIVALUE, FM)}
BUILT_NAMES: tuple[str, ...] = tuple(n for n, f in FAMILIES.items() if f.builds)  # create_global_index's index_type


def family(name: str) -> IndexFamily:
    """The family named `name` (case and surrounding blanks ignored, as Paimon's option values).

    Raises:
        InvalidOptionError: no such family.
    """
    found = FAMILIES.get((name or "").strip().lower())
    if found is None:
        raise InvalidOptionError(f"index_type {name!r} is not supported; bgix knows {_names(FAMILIES)} indexes")
    return found


def built_family(name: str) -> IndexFamily:
    """The family named `name`, which bgix must be able to build.

    Raises:
        InvalidOptionError: no such family, or one bgix only serves.
    """
    found = FAMILIES.get((name or "").strip().lower())
    if found is None or not found.builds:
        raise InvalidOptionError(
            f"index_type {name!r} is not supported; bgix builds only {_names(BUILT_NAMES)} indexes")
    return found


def check_key_type(fam: IndexFamily, column: str, kt: object, shown_type: object) -> None:
    """Refuse a `fam` index on `column` whose keys have KeyType `kt` (shown to people as `shown_type`, the
    table's own spelling of the column type) when the family cannot hold them.

    Raises:
        InvalidOptionError: naming the column, its type and the types the family holds.
    """
    if fam.key_types is None:
        return
    if getattr(kt, "name", None) not in fam.key_types:
        wanted = " or ".join(t.upper() for t in sorted(fam.key_types))
        raise InvalidOptionError(f"column {column!r} has type {shown_type}; {_article(fam.name)} {fam.name} index "
                                 f"needs a {wanted} column")


def check_column_type(fam: IndexFamily, column: str, shown_type: object, *, is_array: bool,
                      keys: KeyType | None) -> KeyType:
    """The KeyType a `fam` index on `column` holds, whatever the table's kind: the column's values, or for a family
    keyed by array elements the elements. Every table kind maps its own column type (`shown_type`, as the table
    spells it) to `is_array` (an ARRAY column) and `keys` (the KeyType of its values, of its elements when an
    array; None: no index can hold them), then asks here, so a build is refused before it starts for the same
    reasons, in the same words, on every kind.

    Raises:
        InvalidOptionError: a scalar column for an element family, an ARRAY column for another family, values no
            index holds, or a type the family does not take (check_key_type).
    """
    article = _article(fam.name)
    if fam.element_keys and not is_array:
        raise InvalidOptionError(f"column {column!r} has type {shown_type}; {article} {fam.name} index needs an "
                                 "ARRAY column")
    if keys is None or (is_array and not fam.element_keys):
        elements = _names(n for n, f in FAMILIES.items() if f.element_keys and f.builds)
        hint = f"; index its elements with index_type {elements}" if is_array and not fam.element_keys else ""
        raise InvalidOptionError(f"column {column!r} has type {shown_type}, which {article} {fam.name} index cannot "
                                 f"hold{hint}")
    check_key_type(fam, column, keys, shown_type)
    return keys


def _article(word: str) -> str:
    """'a' or 'an' before `word` as it is spoken: a short name letter by letter ("an fm index"), a word as a word
    ("a multivalue index", "a btree index")."""
    return "an" if word[:1] in ("aefhilmnorsx" if len(word) <= 2 else "aeiou") else "a"


def _names(names: Iterable[str]) -> str:
    return " or ".join(repr(n) for n in names)


# Paimon's other global index types, which bgix lists but does not read (GET /v1/tables/{t}: served false): what
# each is, and so why. Checked in order; the first prefix that matches names the reason.
_UNSERVED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("full-text", "fulltext", "tantivy"),
     "a full-text index (Tantivy files, paimon-ftindex): it ranks documents by terms; bgix does not read Tantivy "
     "files, so predicates on the column go to the scan step"),
    (("ivf", "diskann", "lumina", "hnsw", "vector", "flat"),
     "a vector index: it answers nearest-neighbour searches, not predicates, so predicates on the column go to the "
     "scan step"),
    (("es-index", "es_index", "elasticsearch"),
     "an index held by an Elasticsearch cluster outside the table; bgix fetches nothing from other services, so "
     "predicates on the column go to the scan step"),
    (("pk-",),
     "a primary-key table's index (it maps keys to buckets and files, not to row ids), so predicates on the column go "
     "to the scan step"),
)


def unserved_reason(name: str) -> str:
    """Why bgix does not serve an index of Paimon's `index_type` `name` (one bgix does not know)."""
    n = (name or "").strip().lower()
    for prefixes, why in _UNSERVED:
        if n.startswith(prefixes):
            return why
    return (f"index_type {name!r} is not one bgix knows (it serves {_names(FAMILIES)}), so predicates on the column "
            "go to the scan step")

