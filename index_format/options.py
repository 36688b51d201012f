"""Index options (spec §7.1) as one declarative table, parsed and validated into IndexOptions.

The only place option keys live. Imports only the standard library and index_format.errors.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TypedDict, cast

from index_format.errors import InvalidOptionError

__all__ = [
    "CODECS", "FM_CODECS", "KEY_ORDERS", "OPTION_TABLE", "IndexOptions", "OptionSpec", "WRITABLE_CODECS",
    "check_families", "format_size", "given_options", "option_error", "parse_options", "parse_size", "shown", "split_pairs",
]

# spec §2.4: on-disk codec ids 0..3; lzo is decodable but bgix has no LZO encoder.
CODECS: tuple[str, ...] = ("none", "zstd", "lz4", "lzo")
WRITABLE_CODECS: tuple[str, ...] = ("none", "zstd", "lz4")
ZSTD_LEVELS = range(1, 23)
# Paimon's fm-index.compression values (lzo is read-only there too: bgix writes none, lz4 or zstd).
FM_CODECS: tuple[str, ...] = ("none", "lz4", "zstd")
# spec §2.7: "logical" (current Paimon Java) or "bytes" (pypaimon 2.1.0, original Java) key order.
KEY_ORDERS: tuple[str, ...] = ("logical", "bytes")

# Paimon's MemorySize units are binary (1 kb = 1024 bytes).
_SIZE_UNITS = {
    "": 1, "b": 1, "byte": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40, "tebibytes": 1 << 40,
}
# At most 30 digits: anything longer is out of every range, and int() of a huge digit string is slow.
_SIZE_RE = re.compile(r"^\s*(\d{1,30})\s*([a-zA-Z]*)\s*$")
_INT_MAX = (1 << 31) - 1  # Java int options


def shown(value: object, limit: int = 80) -> str:
    """repr(value), cut short: an error message must not echo a megabyte of input."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def parse_size(text: str | int) -> int:
    """Bytes for a Paimon memory size: 16384, '16384', '16 kb', '256mb', '0 b' (binary units).

    Raises:
        ValueError: not a non-negative whole number with a known unit.
    """
    if isinstance(text, bool):
        raise ValueError(f"{shown(text)} is not a size")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"size {text} is negative")
        return text
    if not isinstance(text, str):
        raise ValueError(f"{shown(text)} is not a size")
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"{shown(text)} is not a size (examples: 16384, '16 kb', '256 mb', '0 b')")
    unit = m.group(2).lower()
    if unit not in _SIZE_UNITS:
        raise ValueError(f"{shown(text)} has an unknown unit {shown(m.group(2))} (b, kb, mb, gb, tb)")
    return int(m.group(1)) * _SIZE_UNITS[unit]


def format_size(n: int) -> str:
    """Shortest exact Paimon spelling: 16384 → '16 kb', 0 → '0 b'."""
    for unit in ("tb", "gb", "mb", "kb"):
        factor = _SIZE_UNITS[unit]
        if n and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} b"


def _parse_int(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("a boolean is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d{1,30}\s*", value):
        return int(value)
    raise ValueError("not an integer")


def _parse_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError("not a boolean (true or false)")


def _parse_codec(value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in CODECS:
        return value.strip().lower()
    # lzo is accepted here (an index Java wrote with it records it) and refused when writing (codecs.check_codec)
    raise ValueError(f"not a compression codec; writable: {', '.join(WRITABLE_CODECS)} (lzo can only be read)")


def _parse_key_order(value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in KEY_ORDERS:
        return value.strip().lower()
    raise ValueError(f"not a key order (allowed values: {', '.join(KEY_ORDERS)})")


@dataclass(frozen=True, slots=True)
class _Kind:
    """How one option's value parses, checks and prints."""

    name: str
    parse: Callable[[object], object]
    render: Callable[[object], str]


def _size(value: object) -> int:
    if not isinstance(value, (str, int)):
        raise ValueError(f"{shown(value)} is not a size")
    return parse_size(value)


def _render_size(value: object) -> str:
    return format_size(int(value))  # type: ignore[call-overload]  # a size option's value: an int


_SIZE = _Kind("size", _size, _render_size)
_INT = _Kind("int", _parse_int, str)
_BOOL = _Kind("bool", _parse_bool, lambda v: "true" if v else "false")
_CODEC = _Kind("codec", _parse_codec, str)
_KEY_ORDER = _Kind("choice", _parse_key_order, str)


def _parse_fm_codec(value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in FM_CODECS:
        return value.strip().lower()
    raise ValueError(f"not an fm compression codec (allowed values: {', '.join(FM_CODECS)})")


def _parse_power_of_two(value: object) -> int:
    n = _parse_int(value)
    if n < 1 or n & (n - 1):
        raise ValueError("not a power of two")
    return n


_FM_CODEC = _Kind("choice", _parse_fm_codec, str)
_POW2 = _Kind("int", _parse_power_of_two, str)

# Sane bounds (issue 10): a value outside them is a typo or an attack, never a tuning choice.
MAX_DICTIONARY_BLOCK_SIZE = 64 << 20          # one block is decoded whole on every look-up
MAX_FALLBACK_SCAN_SIZE = 2 << 30              # dictionary bytes one scan predicate may read per range
MAX_PARALLELISM = 65_536


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One row of the option table: Paimon key, older keys read as fallbacks, value kind, default.

    `minimum`/`maximum` bound int and size values (inclusive; None: unbounded). `shapes_files`: the value
    changes the bytes or ranges of index files, so an existing index only takes another value by a rebuild.
    `family`: the one index family the option is for (a build of other families refuses it: check_families).
    """

    key: str
    fallback_keys: tuple[str, ...]
    kind: str
    default: object
    help: str
    field: str
    _kind: _Kind
    minimum: int | None = None
    maximum: int | None = None
    shapes_files: bool = False
    family: str | None = None     # the index family whose files it shapes (index_format.families); None: any

    @property
    def default_text(self) -> str:
        return self.render(self.default)

    def render(self, value: object) -> str:
        """A value of this option as its key's value is written ('16 kb', 'true', 'zstd')."""
        return self._kind.render(value)

    @property
    def range_text(self) -> str:
        """'1..22', '1 b..64 mb' or '' (no bounds)."""
        if self.minimum is None and self.maximum is None:
            return ""
        lo = "" if self.minimum is None else self.render(self.minimum)
        hi = "" if self.maximum is None else self.render(self.maximum)
        return f"{lo}..{hi}"

    def parse(self, value: object, key: str | None = None) -> object:
        """The checked value. Raises InvalidOptionError naming the key, the value and the allowed range."""
        key = key or self.key
        try:
            parsed = self._kind.parse(value.strip() if isinstance(value, str) else value)
        except ValueError as exc:
            allowed = f"; allowed {self.range_text}" if self.range_text else ""
            raise option_error(key, f"option {shown(key)}: invalid value {shown(value)}: {exc}{allowed}") from exc
        if isinstance(parsed, int) and not isinstance(parsed, bool) and (
                (self.minimum is not None and parsed < self.minimum)
                or (self.maximum is not None and parsed > self.maximum)):
            raise option_error(key, f"option {shown(key)}: invalid value {shown(value)}: out of range; "
                                    f"allowed {self.range_text}")
        return parsed


def option_error(key: str, message: str) -> InvalidOptionError:
    """An InvalidOptionError whose `option` attribute names the key (the API puts it in error details)."""
    err = InvalidOptionError(message)
    err.option = key  # type: ignore[attr-defined]  # set only on errors about one key
    return err


# spec §7.1 (Java defaults). bgix extensions: `bgix.key-order` (spec §2.7) and `rebuild` (rebuild
# covered ranges from scratch).
OPTION_TABLE: tuple[OptionSpec, ...] = (
    OptionSpec("sorted-index.records-per-range", ("btree-index.records-per-range",), "int",
               10_000_000, "Target records per index file; files rotate at floor(1.2 × value) "
               "records; also sets build parallelism.", "records_per_range", _INT,
               1, _INT_MAX, shapes_files=True),
    OptionSpec("sorted-index.build.max-parallelism", ("btree-index.build.max-parallelism",), "int",
               4096, "Cap on the number of build tasks.", "max_parallelism", _INT, 1, MAX_PARALLELISM),
    OptionSpec("bitmap-index.dictionary-block-size", (), "size", 16384,
               "Target uncompressed dictionary block size (spec §2.8).", "dictionary_block_size",
               _SIZE, 1, MAX_DICTIONARY_BLOCK_SIZE, shapes_files=True, family="bitmap"),
    OptionSpec("bitmap-index.compression", (), "codec", "none",
               "Codec for dictionary blocks and the block index: none, zstd, lz4 (lzo: read only).",
               "compression", _CODEC, shapes_files=True, family="bitmap"),
    OptionSpec("bitmap-index.compression-level", (), "int", 1,
               "zstd compression level, 1..22 (ignored by other codecs).", "compression_level", _INT,
               ZSTD_LEVELS.start, ZSTD_LEVELS.stop - 1, shapes_files=True, family="bitmap"),
    # spec §8: the multivalue index (ARRAY columns) writes the same file format with its own three options.
    OptionSpec("multivalue-index.dictionary-block-size", (), "size", 16384,
               "Target uncompressed dictionary block size of multivalue (ARRAY column) index files (spec §8).",
               "multivalue_dictionary_block_size", _SIZE, 1, MAX_DICTIONARY_BLOCK_SIZE, shapes_files=True, family="multivalue"),
    OptionSpec("multivalue-index.compression", (), "codec", "none",
               "Codec for the dictionary blocks and block index of multivalue index files: none, zstd, lz4 "
               "(lzo: read only).", "multivalue_compression", _CODEC, shapes_files=True, family="multivalue"),
    OptionSpec("multivalue-index.compression-level", (), "int", 1,
               "zstd compression level of multivalue index files, 1..22 (ignored by other codecs).",
               "multivalue_compression_level", _INT, ZSTD_LEVELS.start, ZSTD_LEVELS.stop - 1, shapes_files=True, family="multivalue"),
    OptionSpec("bitmap-index.fallback-scan-max-size", (), "size", 256 * 1024 * 1024,
               "Budget of dictionary bytes a scan predicate may read per range (spec §6); "
               "'0 b' disables scans.", "fallback_scan_max_size", _SIZE, 0, MAX_FALLBACK_SCAN_SIZE),
    OptionSpec("btree-index.block-size", (), "size", 64 * 1024,
               "btree indexes: target uncompressed data block size (Paimon's SST block).", "btree_block_size",
               _SIZE, 1, MAX_DICTIONARY_BLOCK_SIZE, shapes_files=True, family="btree"),
    OptionSpec("btree-index.compression", (), "codec", "none",
               "btree indexes: codec for data blocks and the index block: none, zstd, lz4 (lzo: read only).",
               "btree_compression", _CODEC, shapes_files=True, family="btree"),
    OptionSpec("btree-index.compression-level", (), "int", 1,
               "btree indexes: zstd compression level, 1..22 (ignored by other codecs).", "btree_compression_level",
               _INT, ZSTD_LEVELS.start, ZSTD_LEVELS.stop - 1, shapes_files=True, family="btree"),
    OptionSpec("btree-index.bloom-filter.enabled", (), "bool", False,
               "btree indexes: write a bloom filter of the keys (pypaimon's option; Paimon Java writes none).",
               "btree_bloom_filter", _BOOL, shapes_files=True, family="btree"),
    # Paimon's fm index (STRING columns; docs/format-notes.md "FM global index"): the writer's five options.
    OptionSpec("fm-index.partition-size", (), "size", 16 << 20,
               "fm indexes: a partition (independently readable FM index) closes before its text (each row's "
               "UTF-8 bytes and a separator) would pass this many symbols.", "fm_partition_size", _SIZE,
               2, _INT_MAX - 1, shapes_files=True, family="fm"),
    OptionSpec("fm-index.partition-row-count", (), "int", 100_000,
               "fm indexes: at most this many rows per partition.", "fm_partition_row_count", _INT, 1, _INT_MAX,
               shapes_files=True, family="fm"),
    OptionSpec("fm-index.sa-sample-rate", (), "int", 32,
               "fm indexes: every n-th suffix array entry is stored (a power of two, 1..1024).",
               "fm_sa_sample_rate", _POW2, 1, 1024, shapes_files=True, family="fm"),
    OptionSpec("fm-index.compression", (), "choice", "lz4",
               "fm indexes: codec of the blocks: none, lz4 or zstd.", "fm_compression", _FM_CODEC, shapes_files=True, family="fm"),
    OptionSpec("fm-index.compression-level", (), "int", 1,
               "fm indexes: zstd compression level, 1..22 (ignored by other codecs).", "fm_compression_level",
               _INT, ZSTD_LEVELS.start, ZSTD_LEVELS.stop - 1, shapes_files=True, family="fm"),
    OptionSpec("bgix.key-order", (), "choice", "logical",
               "bgix extension: key order of numeric, date, time and timestamp indexes (spec §2.7): "
               "logical (Paimon Java, bgix) or bytes (pypaimon 2.1, bgix).", "key_order", _KEY_ORDER,
               shapes_files=True),
    OptionSpec("rebuild", (), "bool", False,
               "bgix extension: rebuild every range instead of only ranges not yet covered.",
               "rebuild", _BOOL),
    OptionSpec("bgix.range-sidecar", (), "bool", True,
               "bgix extension: keep a range sidecar (Paimon's range-bitmap format) beside each index file, "
               "so ranges cost about log2(distinct) bitmap operations; derived lazily for files bgix did "
               "not build.", "range_sidecar", _BOOL),
    OptionSpec("bgix.range-sidecar.chunk-size", (), "size", 16384,
               "bgix extension: dictionary chunk size of range sidecars (Paimon's range-bitmap "
               "`chunk-size`).", "range_sidecar_chunk_size", _SIZE, 0, MAX_DICTIONARY_BLOCK_SIZE),
)

_BY_KEY: dict[str, OptionSpec] = {
    k: spec for spec in OPTION_TABLE for k in (spec.key, *spec.fallback_keys)
}
# Paimon keys that exist (spec §7.1) but mean nothing to a bgix bitmap build: named in the error.
_PAIMON_ONLY_KEYS = frozenset({
    "global-index.enabled", "scalar-index.search-mode",
    "global-index.thread-num", "global-index.external-path", "global-index.column-update-action",
    "sorted-index.records-per-file",
    # Paimon's fm read-side keys: they shape no file, and bgix's reader has its own caches
    "fm-index.read-cache-size", "fm-index.demand-page-size", "fm-index.locate-cost-ratio",
})


# Level field → its codec field: a level only shapes files under zstd.
_LEVEL_CODEC = {"compression_level": "compression", "multivalue_compression_level": "multivalue_compression",
                "btree_compression_level": "btree_compression", "fm_compression_level": "fm_compression"}


class OptionFields(TypedDict, total=False):
    """IndexOptions field name → parsed value: the options one input sets (keep in step with IndexOptions)."""

    records_per_range: int
    max_parallelism: int
    dictionary_block_size: int
    compression: str
    compression_level: int
    multivalue_dictionary_block_size: int
    multivalue_compression: str
    multivalue_compression_level: int
    fallback_scan_max_size: int
    btree_block_size: int
    btree_compression: str
    btree_compression_level: int
    btree_bloom_filter: bool
    fm_partition_size: int
    fm_partition_row_count: int
    fm_sa_sample_rate: int
    fm_compression: str
    fm_compression_level: int
    key_order: str
    rebuild: bool
    range_sidecar: bool
    range_sidecar_chunk_size: int


@dataclass(frozen=True)
class IndexOptions:
    """Validated options of one bitmap index (spec §7.1 defaults)."""

    records_per_range: int = 10_000_000
    max_parallelism: int = 4096
    dictionary_block_size: int = 16384
    compression: str = "none"
    compression_level: int = 1
    multivalue_dictionary_block_size: int = 16384
    multivalue_compression: str = "none"
    multivalue_compression_level: int = 1
    fallback_scan_max_size: int = 256 * 1024 * 1024
    btree_block_size: int = 64 * 1024
    btree_compression: str = "none"
    btree_compression_level: int = 1
    btree_bloom_filter: bool = False
    fm_partition_size: int = 16 << 20
    fm_partition_row_count: int = 100_000
    fm_sa_sample_rate: int = 32
    fm_compression: str = "lz4"
    fm_compression_level: int = 1
    key_order: str = "logical"
    rebuild: bool = False
    range_sidecar: bool = True
    range_sidecar_chunk_size: int = 16384

    def __post_init__(self) -> None:
        # Direct construction is validated like parsed input.
        for spec in OPTION_TABLE:
            value = getattr(self, spec.field)
            parsed = spec.parse(value)
            if parsed != value:
                object.__setattr__(self, spec.field, parsed)

    @property
    def records_per_file(self) -> int:
        """Rotation size, Java's (long) (records-per-range × 1.2) in double arithmetic (spec §7.1)."""
        return int(self.records_per_range * 1.2)

    def writable_compression(self, *, multivalue: bool = False) -> str:
        """The codec to write with (`multivalue`: of multivalue files). Raises InvalidOptionError for lzo
        (decode only)."""
        codec = self.multivalue_compression if multivalue else self.compression
        if codec not in WRITABLE_CODECS:
            key = "multivalue-index.compression" if multivalue else "bitmap-index.compression"
            raise InvalidOptionError(
                f"option {key!r}: {codec!r} can be read but not written; use one of {', '.join(WRITABLE_CODECS)}")
        return codec

    def of_family(self, family: str) -> IndexOptions:
        """These options with every other family's at their defaults: what an index of `family` is built with, and
        so records (a btree index never claims a `bitmap-index.compression` of a build that also made bitmaps)."""
        return replace(self, **{s.field: getattr(_DEFAULTS, s.field) for s in OPTION_TABLE
                                if s.family not in (None, family)})

    def to_dict(self) -> dict[str, str]:
        """Paimon key → string value for every option (parse_options(to_dict()) == self)."""
        return {spec.key: spec.render(getattr(self, spec.field)) for spec in OPTION_TABLE}

    def with_overrides(self, raw: Mapping[str, object] | str | None) -> IndexOptions:
        """These options overlaid with `raw` (same parsing as parse_options)."""
        return replace(self, **_parse_fields(raw))

    def differences(self, other: IndexOptions, family: str | None = None) -> list[tuple[str, str, str]]:
        """(key, this value, other value) of every option that shapes index files and differs: files
        built with `self` and with `other` cannot sit in one index (the level counts only under zstd). With
        `family`, only the options that shape that family's files (its own and those of every family)."""
        out = []
        for spec in OPTION_TABLE:
            if not spec.shapes_files or (family is not None and spec.family not in (None, family)):
                continue
            codec = _LEVEL_CODEC.get(spec.field)
            if codec is not None and not (getattr(self, codec) == getattr(other, codec) == "zstd"):
                continue
            a, b = getattr(self, spec.field), getattr(other, spec.field)
            if a != b:
                out.append((spec.key, spec.render(a), spec.render(b)))
        return out


_DEFAULTS = IndexOptions()


def parse_options(raw: Mapping[str, object] | str | IndexOptions | None) -> IndexOptions:
    """Validate options given as a mapping or Paimon's 'k1=v1,k2=v2' string; unset keys keep defaults.

    A primary key wins over its fallback keys. Raises:
        InvalidOptionError: unknown key (the message lists the known keys), or a value that does
            not parse (the message names key and value).
    """
    if isinstance(raw, IndexOptions):
        return raw
    return IndexOptions(**_parse_fields(raw))


def check_families(raw: Mapping[str, object] | str | IndexOptions | None, families: Iterable[str]) -> None:
    """Refuse the options a build request gives (`raw`, as given: not an IndexOptions, which sets every key) that are
    for another index family than the build's `families` (e.g. `bitmap-index.compression` on a btree build): they
    would shape no file, and the index would record them as if applied. The one rule for every table kind.

    Raises:
        InvalidOptionError: naming the option (`option`), the family it is for and the build's families.
    """
    if raw is None or isinstance(raw, IndexOptions):
        return
    built = sorted({f.strip().lower() for f in families})
    keys = _split_string(raw) if isinstance(raw, str) else raw
    for key in keys:
        spec = _BY_KEY.get(key.strip()) if isinstance(key, str) else None
        if spec is None or spec.family is None or spec.family in built:
            continue
        same = [f"{s.key!r} ({s.family})" for s in OPTION_TABLE
                if s.family in built and s.key.split(".", 1)[1] == spec.key.split(".", 1)[1]]
        raise option_error(key.strip(), f"option {shown(key.strip())} belongs to the {spec.family} index family; this "
                                        f"build makes {' and '.join(built)} indexes, which it does not shape: leave "
                                        f"it out{', or use ' + ', '.join(same) if same else ''}")


def given_options(raw: Mapping[str, object] | str | None) -> dict[str, object]:
    """Only the options `raw` sets, validated: IndexOptions field name → value (what overrides a base).

    Raises:
        InvalidOptionError: as parse_options.
    """
    return dict(_parse_fields(raw))


def _parse_fields(raw: Mapping[str, object] | str | None) -> OptionFields:
    if raw is not None and not isinstance(raw, (str, Mapping)):
        raise InvalidOptionError(f"options must be an object or a 'k1=v1,k2=v2' string, "
                                 f"not {type(raw).__name__}")
    items: Mapping[str, object]
    if isinstance(raw, str):
        items = _split_string(raw)
    else:
        items = dict(raw or {})
    chosen: dict[str, tuple[int, str, object]] = {}  # field → (rank, key, value); rank 0 = primary
    for key, value in items.items():
        if not isinstance(key, str):
            raise InvalidOptionError(f"option key {shown(key)} is not a string")
        key = key.strip()
        spec = _BY_KEY.get(key)
        if spec is None:
            raise option_error(key, _unknown_message(key))
        rank = 0 if key == spec.key else 1 + spec.fallback_keys.index(key)
        if spec.field not in chosen or rank < chosen[spec.field][0]:
            chosen[spec.field] = (rank, key, value)
    out: dict[str, object] = {}
    for field_name, (_rank, key, value) in chosen.items():
        out[field_name] = _BY_KEY[key].parse(value, key)
    # Each key is an IndexOptions field (OPTION_TABLE's `field`) and each value passed that field's parser.
    return cast(OptionFields, out)


# ';' always separates two options; ',' only when a `key=` follows, so a value may hold commas (a column list
# "file-index.bitmap.columns=a,b") and both spellings, Paimon's "k1=v1,k2=v2" and "k1=v1;k2=v2", work everywhere
_SEPARATOR = re.compile(r";|,(?=\s*[A-Za-z0-9_.\-]+\s*=)")


def split_pairs(text: str) -> list[str]:
    """An options string's 'key=value' parts, separated by ';' or ',' (see _SEPARATOR); empty parts dropped."""
    return [part.strip() for part in _SEPARATOR.split(text) if part.strip()]


def _split_string(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in split_pairs(text):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise InvalidOptionError(
                f"option {shown(part)} is not 'key=value' (options are 'k1=v1,k2=v2' or 'k1=v1;k2=v2')")
        out[key.strip()] = value.strip()  # last one wins, like Paimon's procedure
    return out


def _unknown_message(key: str) -> str:
    known = ", ".join(sorted(_BY_KEY))
    if key in _PAIMON_ONLY_KEYS:
        return f"option {shown(key)} is not used by bgix builds; known options: {known}"
    return f"unknown option {shown(key)}; known options: {known}"


# The dataclass fields, the table and OptionFields must describe the same options.
assert {f.name for f in fields(IndexOptions)} == {s.field for s in OPTION_TABLE} == set(OptionFields.__annotations__)
