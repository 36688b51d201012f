"""Index options (spec §7.1) as one declarative table, parsed and validated into IndexOptions.

The only place option keys live. Imports only the standard library and index_format.errors.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace

from index_format.errors import InvalidOptionError

__all__ = [
    "CODECS", "KEY_ORDERS", "OPTION_TABLE", "IndexOptions", "OptionSpec", "WRITABLE_CODECS",
    "format_size", "parse_options", "parse_size",
]

# spec §2.4: on-disk codec ids 0..3; lzo is decodable but bgix has no LZO encoder.
CODECS: tuple[str, ...] = ("none", "zstd", "lz4", "lzo")
WRITABLE_CODECS: tuple[str, ...] = ("none", "zstd", "lz4")
ZSTD_LEVELS = range(1, 23)
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
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_INT_MAX = (1 << 31) - 1  # Java int options


def parse_size(text: str | int) -> int:
    """Bytes for a Paimon memory size: 16384, '16384', '16 kb', '256mb', '0 b' (binary units).

    Raises:
        ValueError: not a non-negative whole number with a known unit.
    """
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a size")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"size {text} is negative")
        return text
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a size")
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a size (examples: 16384, '16 kb', '256 mb', '0 b')")
    unit = m.group(2).lower()
    if unit not in _SIZE_UNITS:
        raise ValueError(f"{text!r} has an unknown unit {m.group(2)!r} (b, kb, mb, gb, tb)")
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
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
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
    raise ValueError(f"not a compression codec ({', '.join(CODECS)})")


def _parse_key_order(value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in KEY_ORDERS:
        return value.strip().lower()
    raise ValueError(f"not a key order (allowed values: {', '.join(KEY_ORDERS)})")


def _positive(n: int) -> int:
    if n <= 0:
        raise ValueError("must be positive")
    return n


@dataclass(frozen=True, slots=True)
class _Kind:
    """How one option's value parses, checks and prints."""

    name: str
    parse: Callable[[object], object]
    render: Callable[[object], str]


def _size(value: object) -> int:
    if not isinstance(value, (str, int)):
        raise ValueError(f"{value!r} is not a size")
    return parse_size(value)


def _render_size(value: object) -> str:
    return format_size(int(value))  # type: ignore[call-overload]


_SIZE = _Kind("size", _size, _render_size)
_POSITIVE_SIZE = _Kind("size", lambda v: _positive(_size(v)), _render_size)
_POSITIVE_INT = _Kind("int", lambda v: _positive(_check_int_range(_parse_int(v))), str)
_BOOL = _Kind("bool", _parse_bool, lambda v: "true" if v else "false")
_CODEC = _Kind("codec", _parse_codec, str)
_KEY_ORDER = _Kind("choice", _parse_key_order, str)


def _check_int_range(n: int) -> int:
    if n > _INT_MAX:
        raise ValueError(f"exceeds {_INT_MAX}")
    return n


def _zstd_level(value: object) -> int:
    n = _parse_int(value)
    if n not in ZSTD_LEVELS:
        raise ValueError(f"zstd level must be in 1..22, got {n}")
    return n


_LEVEL = _Kind("int", _zstd_level, str)


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One row of the option table: Paimon key, older keys read as fallbacks, value kind, default."""

    key: str
    fallback_keys: tuple[str, ...]
    kind: str
    default: object
    help: str
    field: str
    _kind: _Kind

    @property
    def default_text(self) -> str:
        return self._kind.render(self.default)


# spec §7.1 (Java defaults). bgix extensions: `bgix.key-order` (spec §2.7) and `rebuild` (rebuild
# covered ranges from scratch).
OPTION_TABLE: tuple[OptionSpec, ...] = (
    OptionSpec("sorted-index.records-per-range", ("btree-index.records-per-range",), "int",
               10_000_000, "Target records per index file; files rotate at floor(1.2 × value) "
               "records; also sets build parallelism.", "records_per_range", _POSITIVE_INT),
    OptionSpec("sorted-index.build.max-parallelism", ("btree-index.build.max-parallelism",), "int",
               4096, "Cap on the number of build tasks.", "max_parallelism", _POSITIVE_INT),
    OptionSpec("bitmap-index.dictionary-block-size", (), "size", 16384,
               "Target uncompressed dictionary block size (spec §2.8).", "dictionary_block_size",
               _POSITIVE_SIZE),
    OptionSpec("bitmap-index.compression", (), "codec", "none",
               "Codec for dictionary blocks and the block index: none, zstd, lz4 (lzo: read only).",
               "compression", _CODEC),
    OptionSpec("bitmap-index.compression-level", (), "int", 1,
               "zstd compression level, 1..22 (ignored by other codecs).", "compression_level", _LEVEL),
    OptionSpec("bitmap-index.fallback-scan-max-size", (), "size", 256 * 1024 * 1024,
               "Budget of dictionary bytes a scan predicate may read per range (spec §6); "
               "'0 b' disables scans.", "fallback_scan_max_size", _SIZE),
    OptionSpec("bgix.key-order", (), "choice", "logical",
               "bgix extension: key order of numeric, date, time and timestamp indexes (spec §2.7): "
               "logical (Paimon Java, bgix) or bytes (pypaimon 2.1, bgix).", "key_order", _KEY_ORDER),
    OptionSpec("rebuild", (), "bool", False,
               "bgix extension: rebuild every range instead of only ranges not yet covered.",
               "rebuild", _BOOL),
)

_BY_KEY: dict[str, OptionSpec] = {
    k: spec for spec in OPTION_TABLE for k in (spec.key, *spec.fallback_keys)
}
# Paimon keys that exist (spec §7.1) but mean nothing to a bgix bitmap build: named in the error.
_PAIMON_ONLY_KEYS = frozenset({
    "multivalue-index.dictionary-block-size", "multivalue-index.compression",
    "multivalue-index.compression-level", "global-index.enabled", "scalar-index.search-mode",
    "global-index.thread-num", "global-index.external-path", "global-index.column-update-action",
    "sorted-index.records-per-file",
})


@dataclass(frozen=True)
class IndexOptions:
    """Validated options of one bitmap index (spec §7.1 defaults)."""

    records_per_range: int = 10_000_000
    max_parallelism: int = 4096
    dictionary_block_size: int = 16384
    compression: str = "none"
    compression_level: int = 1
    fallback_scan_max_size: int = 256 * 1024 * 1024
    key_order: str = "logical"
    rebuild: bool = False

    def __post_init__(self) -> None:
        # Direct construction is validated like parsed input.
        for spec in OPTION_TABLE:
            value = getattr(self, spec.field)
            try:
                parsed = spec._kind.parse(value)
            except ValueError as exc:
                raise InvalidOptionError(
                    f"option {spec.key!r}: invalid value {value!r}: {exc}") from exc
            if parsed != value:
                object.__setattr__(self, spec.field, parsed)

    @property
    def records_per_file(self) -> int:
        """Rotation size, Java's (long) (records-per-range × 1.2) in double arithmetic (spec §7.1)."""
        return int(self.records_per_range * 1.2)

    def writable_compression(self) -> str:
        """The codec to write with. Raises InvalidOptionError for lzo (decode only)."""
        if self.compression not in WRITABLE_CODECS:
            raise InvalidOptionError(
                f"option 'bitmap-index.compression': {self.compression!r} can be read but not "
                f"written; use one of {', '.join(WRITABLE_CODECS)}")
        return self.compression

    def to_dict(self) -> dict[str, str]:
        """Paimon key → string value for every option (parse_options(to_dict()) == self)."""
        return {spec.key: spec._kind.render(getattr(self, spec.field)) for spec in OPTION_TABLE}

    def with_overrides(self, raw: Mapping[str, object] | str | None) -> IndexOptions:
        """These options overlaid with `raw` (same parsing as parse_options)."""
        return replace(self, **_parse_fields(raw))


def parse_options(raw: Mapping[str, object] | str | IndexOptions | None) -> IndexOptions:
    """Validate options given as a mapping or Paimon's 'k1=v1,k2=v2' string; unset keys keep defaults.

    A primary key wins over its fallback keys. Raises:
        InvalidOptionError: unknown key (the message lists the known keys), or a value that does
            not parse (the message names key and value).
    """
    if isinstance(raw, IndexOptions):
        return raw
    return IndexOptions(**_parse_fields(raw))


def _parse_fields(raw: Mapping[str, object] | str | None) -> dict[str, object]:
    items = _split_string(raw) if isinstance(raw, str) else dict(raw or {})
    chosen: dict[str, tuple[int, str, object]] = {}  # field → (rank, key, value); rank 0 = primary
    for key, value in items.items():
        if not isinstance(key, str):
            raise InvalidOptionError(f"option key {key!r} is not a string")
        key = key.strip()
        spec = _BY_KEY.get(key)
        if spec is None:
            raise InvalidOptionError(_unknown_message(key))
        rank = 0 if key == spec.key else 1 + spec.fallback_keys.index(key)
        if spec.field not in chosen or rank < chosen[spec.field][0]:
            chosen[spec.field] = (rank, key, value)
    out: dict[str, object] = {}
    for field_name, (_rank, key, value) in chosen.items():
        spec = _BY_KEY[key]
        try:
            out[field_name] = spec._kind.parse(value.strip() if isinstance(value, str) else value)
        except ValueError as exc:
            raise InvalidOptionError(f"option {key!r}: invalid value {value!r}: {exc}") from exc
    return out


def _split_string(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise InvalidOptionError(
                f"option {part.strip()!r} is not 'key=value' (options are 'k1=v1,k2=v2')")
        out[key.strip()] = value.strip()  # last one wins, like Paimon's procedure
    return out


def _unknown_message(key: str) -> str:
    known = ", ".join(sorted(_BY_KEY))
    if key in _PAIMON_ONLY_KEYS:
        return f"option {key!r} is not used by bgix bitmap indexes; known options: {known}"
    return f"unknown option {key!r}; known options: {known}"


# The dataclass fields and the table must describe the same options.
assert {f.name for f in fields(IndexOptions)} == {s.field for s in OPTION_TABLE}
