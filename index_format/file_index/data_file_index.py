"""What Paimon's data-file writer attaches to each data file: `io/DataFileIndexWriter` driven by
`fileindex/FileIndexOptions` (spec §9), producing the FileIndexFormat container byte for byte.

Options (table options; other keys are ignored):

- `file-index.<type>.columns = c1,m[k1],...` declares an index of `<type>` on column c1 and on the value of
  key k1 of MAP column m (container column `m[k1]`, Paimon's FileIndexCommon.toMapKey);
- `file-index.<type>.<column>.<option> = value` sets an option of one declared index; `<column>` may be a
  map column `m` (every declared key of m) or one key `m[k1]` (wins over `m`). A key must split on `.`
  into exactly those three parts, otherwise it is ignored, as in Java.

Byte-exactness hinges on order: Java keeps everything in `java.util.HashMap`s (options, declared columns,
maintainers, the column → index type map handed to the container writer), so the container lists columns
and index types in HashMap iteration order. Each map here records the calls Java makes (put or
computeIfAbsent, in the same sequence) and asks java_hashmap for the resulting iteration order.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pyarrow as pa

from index_format.errors import InvalidOptionError, UnsupportedTypeError
from index_format.file_index import formats
from index_format.file_index.container import write_container
from index_format.file_index.java_hash import java_string_order, string_hash
from index_format.file_index.java_hashmap import computeifabsent_order, put_order
from index_format.file_index.schema import FieldType, parse_field_type
from index_format.file_index.values import paimon_spelling, paimon_type
from index_format.layout import java_int
from index_format.types import KeyType, from_arrow

__all__ = ["FileIndexOptions", "IndexedColumn", "parse_file_index_options", "write_data_file_index"]

PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


# --- java.util.HashMap order ----------------------------------------------------------------------------------

class _JavaMap(Generic[K, V]):
    """A dict that remembers how Java filled its HashMap twin (all `put` or all `computeIfAbsent`) and
    iterates in that twin's order."""

    def __init__(self, hash_of: Callable[[K], int], sort_key_of: Callable[[K], Any]) -> None:
        self._values: dict[K, V] = {}
        self._hash_of = hash_of
        self._sort_key_of = sort_key_of
        self._kind: str | None = None
        self._trailing = False  # a computeIfAbsent on an existing key came after the last new key

    def _use(self, kind: str) -> None:
        if self._kind not in (None, kind):
            raise AssertionError("one map is filled either by put or by computeIfAbsent")
        self._kind = kind

    def put(self, key: K, value: V) -> None:
        self._use("put")
        self._values[key] = value  # an existing key keeps its place, as in Java

    def compute_if_absent(self, key: K, factory: Callable[[], V]) -> V:
        self._use("computeIfAbsent")
        if key in self._values:
            self._trailing = True
            return self._values[key]
        self._trailing = False
        value = self._values[key] = factory()
        return value

    def get(self, key: K) -> V | None:
        return self._values.get(key)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[K]:
        keys = list(self._values)
        if len(keys) <= 1:
            return keys
        hashes = [self._hash_of(k) for k in keys]
        sort_keys = [self._sort_key_of(k) for k in keys]
        if self._kind == "put":
            order = put_order(hashes, sort_keys)
        else:
            order = computeifabsent_order(hashes, sort_keys, trailing_call=self._trailing).tolist()
        return [keys[i] for i in order]

    def items(self) -> Iterator[tuple[K, V]]:
        return ((k, self._values[k]) for k in self.keys())


def _string_map() -> _JavaMap[str, Any]:
    return _JavaMap(string_hash, java_string_order)


# FileIndexOptions.Column: (column name, nested (map key) name or None, is nested)
_Column = tuple[str, "str | None", bool]
_M32 = 0xFFFFFFFF


def _column_hash(c: _Column) -> int:
    """`Column.hashCode()` = Arrays.hashCode(new Object[]{columnName, nestedColumnName, isNestedColumn})."""
    h = 1
    for part in (string_hash(c[0]), 0 if c[1] is None else string_hash(c[1]), 1231 if c[2] else 1237):
        h = (31 * h + part) & _M32
    return java_int(h)


def _column_sort_key(c: _Column) -> Any:
    # Column is not Comparable: inside a (practically unreachable) tree bin Java orders by identity hash
    # codes, so any fixed order is as faithful as another.
    return (java_string_order(c[0]), java_string_order(c[1] or ""), c[2])


def _column_map() -> _JavaMap[_Column, Any]:
    return _JavaMap(_column_hash, _column_sort_key)


# --- Java string helpers ------------------------------------------------------------------------------------

def _java_split(text: str, sep: str) -> list[str]:
    """`String.split` on a literal: no match gives [text]; trailing empty strings are dropped."""
    parts = text.split(sep)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_trim(text: str) -> str:
    """`String.trim`: drops characters <= U+0020 at both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def _java_whitespace(ch: str) -> bool:
    """`Character.isWhitespace`: space separators except the no-break ones, and \\t\\n\\v\\f\\r, U+001C-1F."""
    o = ord(ch)
    if o in (0x00A0, 0x2007, 0x202F):
        return False
    return 0x09 <= o <= 0x0D or 0x1C <= o <= 0x1F or unicodedata.category(ch) in ("Zs", "Zl", "Zp")


def _nested_position(column: str) -> int | None:
    """`FileIndexOptions.topLevelIndexOfNested`: the first '[' when the name also ends with ']'."""
    start = column.find("[")
    return start if start != -1 and column.endswith("]") else None


def _to_column(name: str) -> _Column:
    pos = _nested_position(name)
    if pos is None:
        return (name, None, False)
    return (name[:pos], name[pos + 1:-1], True)


# --- option parsing (FileIndexOptions.setupOptions) ----------------------------------------------------------

@dataclass(frozen=True)
class IndexedColumn:
    """One declared column (or map key) and its index types → options, in Java's HashMap order."""

    column: str                      # the table column
    map_key: str | None              # the key of MAP column `column`, for `column[map_key]`
    index_types: dict[str, dict[str, str]]

    @property
    def name(self) -> str:
        """The name in the container (FileIndexCommon.toMapKey for map keys)."""
        return self.column if self.map_key is None else f"{self.column}[{self.map_key}]"


@dataclass(frozen=True)
class FileIndexOptions:
    """Parsed `file-index.*` options. `columns` is in the iteration order of Java's
    `HashMap<Column, Map<String, Options>>`; `map_options[(m, type)]` holds the options set on map column m
    as a whole (applied to every declared key of m, under the key's own options)."""

    columns: list[IndexedColumn] = field(default_factory=list)
    map_options: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.columns


def parse_file_index_options(options: Mapping[str, str]) -> FileIndexOptions:
    """Parse table options the way Paimon's FileIndexOptions does (other keys are ignored).

    Raises:
        InvalidOptionError: an empty column name in a `.columns` list, a `file-index.columns` key without
            an index type, or an option for a column not declared for that index type.
    """
    table: _JavaMap[str, str] = _string_map()  # Options.data, filled by put in the given order
    for key, value in options.items():
        table.put(str(key), str(value))

    declared: _JavaMap[_Column, _JavaMap[str, dict[str, str]]] = _column_map()   # indexTypeOptions
    map_level: _JavaMap[_Column, _JavaMap[str, dict[str, str]]] = _column_map()  # topLevelMapColumnOptions
    rest: _JavaMap[str, str] = _string_map()

    for key, value in table.items():
        if not key.startswith(PREFIX):
            continue
        if not key.endswith(COLUMNS_SUFFIX):
            rest.put(key, value)
            continue
        if len(key) < len(PREFIX) + len(COLUMNS_SUFFIX):  # "file-index.columns": Java fails on substring
            raise InvalidOptionError(f"option {key!r} names no index type; expected "
                                     f"'{PREFIX}<type>{COLUMNS_SUFFIX}'")
        index_type = key[len(PREFIX):len(key) - len(COLUMNS_SUFFIX)]
        for name in _java_split(value, ","):
            if all(_java_whitespace(ch) for ch in name):
                raise InvalidOptionError(f"Wrong option in {key}, should not have empty column "
                                         f"(value {value!r})")
            column = _to_column(_java_trim(name))
            declared.compute_if_absent(column, _string_map).compute_if_absent(index_type, dict)
            if column[2]:
                map_level.compute_if_absent((column[0], None, False), _string_map) \
                    .compute_if_absent(index_type, dict)

    for key, value in rest.items():
        parts = _java_split(key[len(PREFIX):], ".")
        if len(parts) != 3:
            continue  # not <type>.<column>.<option>: Java ignores it
        index_type, cname, opkey = parts
        types = declared.get(_to_column(cname))
        target = types.get(index_type) if types is not None else None
        if target is None:
            top = map_level.get((cname, None, False))
            target = top.get(index_type) if top is not None else None
        if target is None:
            raise InvalidOptionError(
                f"Wrong file index option '{key}': column '{cname}' is not declared in "
                f"'{PREFIX}{index_type}{COLUMNS_SUFFIX}'. Please add '{PREFIX}{index_type}{COLUMNS_SUFFIX}' "
                f"= '{cname}' before setting column options. For map nested index, declare it like "
                f"'<map-column>[<map-key>]'.")
        target[opkey] = value

    columns = [IndexedColumn(c[0], c[1], dict(types.items())) for c, types in declared.items()]
    map_options = {(c[0], t): opts for c, types in map_level.items() for t, opts in types.items()}
    return FileIndexOptions(columns, map_options)


# --- column types ---------------------------------------------------------------------------------------------

_STRING_KEY = re.compile(r"^\s*(CHAR|VARCHAR|STRING|CHARACTER|CHARACTER\s+VARYING)\b", re.IGNORECASE)


def _arrow_spelling(t: pa.DataType) -> str:
    """The Paimon spelling of an Arrow type (only needs to be right for the indexable ones)."""
    if pa.types.is_map(t):
        return f"MAP<{_arrow_spelling(t.key_type)},{_arrow_spelling(t.item_type)}>"
    try:
        return paimon_spelling(from_arrow(t))
    except UnsupportedTypeError:
        return str(t).upper()


# --- the writer (DataFileIndexWriter) -------------------------------------------------------------------------

def _column_array(table: pa.Table, name: str) -> pa.Array:
    if name not in table.column_names:
        raise InvalidOptionError(f"column {name!r} is in the schema but not in the data; data columns: "
                                 f"{', '.join(table.column_names)}")
    return table.column(name).combine_chunks()


class _Maintainer:
    """FileIndexMaintainer: one writer fed every row of one column."""

    def __init__(self, column: str, index_type: str, kt: KeyType, options: dict[str, str]) -> None:
        self.column, self.index_type, self.kt, self.options = column, index_type, kt, options

    def serialized(self, table: pa.Table) -> list[tuple[str, bytes | None]]:
        values = _column_array(table, self.column)
        return [(self.column, formats.write_payload(self.index_type, self.kt, values, self.options))]


class _MapMaintainer:
    """MapFileIndexMaintainer: one writer per declared key of a MAP column, each fed, per row, the value of
    its key (null when the map is null or lacks it; every value when a map repeats the key, as Java)."""

    def __init__(self, column: str, index_type: str, value_kt: KeyType, options: dict[str, str]) -> None:
        self.column, self.index_type, self.kt, self.options = column, index_type, value_kt, options
        self.keys: _JavaMap[str, dict[str, str]] = _string_map()  # indexWritersMap

    def add(self, key: str, options: dict[str, str]) -> None:
        self.keys.put(key, {**self.options, **options})  # new Options(top, nested): nested wins

    def _values(self, table: pa.Table, wanted: list[str]) -> dict[str, pa.Array]:
        arr = _column_array(table, self.column)
        if not pa.types.is_map(arr.type):
            raise UnsupportedTypeError(f"column {self.column!r} is declared MAP but holds Arrow {arr.type}")
        keys = arr.keys.to_pylist()
        offsets = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        picks: dict[str, list[int | None]] = {k: [] for k in wanted}
        for row, ok in enumerate(valid):
            if not ok:
                for k in wanted:
                    picks[k].append(None)
                continue
            seen = set()
            for j in range(offsets[row], offsets[row + 1]):
                hit = picks.get(keys[j])
                if hit is not None:
                    hit.append(j)
                    seen.add(keys[j])
            for k in wanted:
                if k not in seen:
                    picks[k].append(None)
        return {k: arr.items.take(pa.array(idx, type=pa.int64())) for k, idx in picks.items()}

    def serialized(self, table: pa.Table) -> list[tuple[str, bytes | None]]:
        result: _JavaMap[str, bytes | None] = _string_map()
        order = self.keys.keys()
        if table.num_rows == 0:  # the writers never saw a record: FileIndexWriter.empty() → start -1
            for k in order:
                result.put(f"{self.column}[{k}]", None)
        else:
            values = self._values(table, order)
            for k in order:
                result.put(f"{self.column}[{k}]", formats.write_payload(
                    self.index_type, self.kt, values[k], self.keys.get(k) or {}))
        return list(result.items())


def _schema_types(table: pa.Table, schema: Sequence[tuple[str, str]] | None) -> dict[str, FieldType]:
    pairs = schema if schema is not None else [(f.name, _arrow_spelling(f.type)) for f in table.schema]
    return {name: parse_field_type(spelling) for name, spelling in pairs}


def write_data_file_index(table: pa.Table, schema: Sequence[tuple[str, str]] | None,
                          options: Mapping[str, str]) -> bytes | None:
    """The FileIndexFormat blob Paimon's data-file writer builds for `table` under these table options, or
    None when no `file-index.<type>.columns` option declares an index.

    `schema`: (name, Paimon type spelling) per column, e.g. ("m", "MAP<STRING,STRING>"); by default derived
    from the Arrow schema.

    Raises:
        InvalidOptionError: bad options (see parse_file_index_options), an unknown index type, a declared
            column that does not exist, a map key declared on a column that is not a MAP.
        UnsupportedTypeError: an index on a type it cannot hold (a MAP column itself, a non-string map key).
    """
    parsed = parse_file_index_options(options)
    if parsed.empty:
        return None
    fields = _schema_types(table, schema)

    maintainers: _JavaMap[str, _JavaMap[str, Any]] = _string_map()  # index type → column → maintainer
    for col in parsed.columns:
        ftype = fields.get(col.column)
        if ftype is None:
            raise InvalidOptionError(f"{col.column} does not exist in column fields (indexed as "
                                     f"{col.name!r}; columns: {', '.join(fields)})")
        for index_type, opts in col.index_types.items():
            formats.writer(index_type)  # unknown type → InvalidOptionError, as FileIndexer.create
            per_column = maintainers.compute_if_absent(index_type, _string_map)
            current = per_column.get(col.column)
            if col.map_key is not None:
                if not ftype.is_map:
                    raise InvalidOptionError(
                        f"Column {col.column} is nested column, but is not map type ({ftype.spelling}); "
                        f"'{col.name}' can only index a key of a MAP column")
                if current is None:
                    if not _STRING_KEY.match(ftype.map_key or ""):
                        raise UnsupportedTypeError(
                            f"column {col.column} is {ftype.spelling}: only maps with CHAR, VARCHAR or "
                            f"STRING keys can be indexed per key")
                    if ftype.map_value is None:
                        raise UnsupportedTypeError(f"values of column {col.column} ({ftype.spelling}) "
                                                   f"cannot be indexed: {ftype.error}")
                    current = _MapMaintainer(col.column, index_type, ftype.map_value,
                                             parsed.map_options.get((col.column, index_type), {}))
                    per_column.put(col.column, current)
                elif not isinstance(current, _MapMaintainer):  # Java: ClassCastException
                    raise InvalidOptionError(f"column {col.column!r} has a {index_type} index both as a "
                                             f"whole and per map key ({col.name!r})")
                current.add(col.map_key, opts)
            elif current is None:
                if ftype.value is None:
                    hint = f"; index its keys as {col.column}[key]" if ftype.is_map else ""
                    raise UnsupportedTypeError(f"column {col.column} ({ftype.spelling}) cannot have a "
                                               f"{index_type} index{hint}: {ftype.error or 'map type'}")
                per_column.put(col.column, _Maintainer(col.column, index_type, ftype.value, opts))
            # else: a map maintainer already exists for this column and type; Java keeps it, drops this

    index_maps: _JavaMap[str, _JavaMap[str, bytes | None]] = _string_map()  # serializeMaintainers
    for index_type, per_column in maintainers.items():
        for _, maintainer in per_column.items():
            for name, payload in maintainer.serialized(table):
                index_maps.compute_if_absent(name, _string_map).put(index_type, payload)
    return write_container({name: dict(types.items()) for name, types in index_maps.items()})
