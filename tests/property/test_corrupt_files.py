"""Corrupted index files: every reader operation either answers or raises IndexFormatError.

Real files are mutated (Java reference vectors, plus files our writer makes with zstd/lz4/none):
byte flips, truncation, extension, wrong recorded sizes, extreme footer fields, extreme or
malformed varints inside dictionary blocks and the block index (with the CRC re-computed so the
parser, not the checksum, meets the damage). Any other exception type, a hang, or a large
allocation is a reader bug. Targeted tests pin the error subclass and message for common damage.
"""
from __future__ import annotations

import os
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from index_format.errors import (
    ChecksumError,
    CorruptFileError,
    IndexFormatError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from index_format.options import IndexOptions
from index_format.global_index.reader import open_index
from index_format.storage import BytesSource
from index_format.types import parse_type
from index_format.global_index.writer import write_index_bytes
from tests.compat.vectors import parse_value
from tests.data import GLOBAL_INDEX

VECTORS = GLOBAL_INDEX
FOOTER = struct.Struct(">qiqiqiiii")  # spec §2.2, written out here independently of layout.py
FOOTER_FIELDS = [(0, ">q"), (8, ">i"), (12, ">q"), (20, ">i"), (24, ">q"), (32, ">i"), (36, ">i"),
                 (40, ">i"), (44, ">i")]
EXAMPLES = int(os.environ.get("BGIX_FUZZ_EXAMPLES", "30"))  # raise locally for a longer hunt
RANDOM = os.environ.get("BGIX_FUZZ_RANDOM") == "1"  # CI is deterministic; set 1 to explore new inputs
BIG_FILE = 64 * 1024  # files above this get EXAMPLES // 8 examples (each example re-reads every block)
MAX_PEAK_BYTES = 64 * 1024 * 1024
MAX_SECONDS_PER_EXAMPLE = 20.0

# Java reference vectors small enough to fuzz quickly (file, key type, input rows).
JAVA_CASES = [
    ("java/str_mixed.none1.b48.java.idx", "string", "java/str_mixed.tsv"),
    ("java/int_mixed.none1.b32.java.idx", "int", "java/int_mixed.tsv"),
    ("java/bigint_hi_rows.none1.b24.java.idx", "bigint", "java/bigint_hi_rows.tsv"),
    ("java/double_special.none1.b16384.java.idx", "double", "java/double_special.tsv"),
    ("java/float_special.none1.b16384.java.idx", "float", "java/float_special.tsv"),
    ("java/boolean.none1.b16384.java.idx", "boolean", "java/boolean.tsv"),
    ("java/tinyint.none1.b16384.java.idx", "tinyint", "java/tinyint.tsv"),
    ("java/smallint.none1.b16384.java.idx", "smallint", "java/smallint.tsv"),
    ("java/all_null.none1.b16384.java.idx", "string", "java/all_null.tsv"),
    ("java/incompressible.zstd1.b16384.java.idx", "string", "java/incompressible.tsv"),
    ("java/incompressible.lz41.b16384.java.idx", "string", "java/incompressible.tsv"),
    ("java/incompressible.lzo1.b16384.java.idx", "string", "java/incompressible.tsv"),
    ("java/str_many.zstd3.b512.java.idx", "string", "java/str_many.tsv"),
    ("golden/category.bitmap.java.idx", "string", None),
]
# Files our writer makes: small blocks so there are many dictionary blocks, every codec.
OWN_CASES = [
    ("own/str.zstd.b64", "string", "zstd", 64),
    ("own/str.lz4.b64", "string", "lz4", 64),
    ("own/str.none.b40", "string", "none", 40),
    ("own/int.zstd.b32", "int", "zstd", 32),
    ("own/bigint.lz4.b48", "bigint", "lz4", 48),
]


@dataclass(frozen=True, repr=False)
class Case:
    name: str
    data: bytes
    type_name: str
    probes: tuple[object, ...]           # values to look up (present and absent)
    prefixes: tuple[str, ...]            # starts_with probes (strings only)
    trailed: tuple[tuple[str, int, int], ...]   # (block name, stored body offset, stored length)

    def __repr__(self) -> str:
        return f"Case({self.name!r})"


@dataclass(frozen=True, repr=False)
class Mutation:
    kind: str
    data: bytes
    size: int | None = None     # the size the manifest records, when it is not len(data)
    detail: str = ""

    def __repr__(self) -> str:
        return f"Mutation({self.kind}, {len(self.data)} bytes, size={self.size}, {self.detail})"


def _input_values(rel: str | None, type_name: str) -> list[object]:
    if rel is None:  # golden file: keys from spec §12.1 are not needed, a few plausible ones suffice
        return ["A", "B", "C", "a", "zzz"]
    values = []
    for line in (VECTORS / rel).read_text(encoding="utf-8").split("\n"):
        if line:
            values.append(parse_value(type_name, line.partition("\t")[2]))
    return values


def _probes(values: list[object], type_name: str) -> tuple[tuple[object, ...], tuple[str, ...]]:
    present = [v for v in dict.fromkeys(values) if v is not None]
    picks = present[:2] + present[len(present) // 2:len(present) // 2 + 1] + present[-1:]
    absent: object = {"string": "\uffff-absent", "boolean": None, "float": 0.5, "double": 0.25,
                      "tinyint": 77, "smallint": 12_345, "int": -999_999, "bigint": 1 << 62}[type_name]
    probes = tuple(p for p in [*picks, absent] if p is not None)
    prefixes: tuple[str, ...] = ()
    if type_name == "string":
        prefixes = tuple(dict.fromkeys([*(str(p)[:1] for p in picks if p), "key-0", "\x00"]))
    return probes, prefixes


def _trailed_blocks(data: bytes, type_name: str) -> tuple[tuple[str, int, int], ...]:
    """Trailed blocks of a pristine file, found with a reader that works on it."""
    reader = open_index(BytesSource(data, "pristine"), parse_type(type_name))
    f = reader.footer
    blocks = [("block index", f.index_offset, f.index_length)]
    info = getattr(reader, "block_info", None)
    if callable(info):
        blocks += [(f"dictionary block {i}", off, n) for i, (_k, off, n) in enumerate(info())]
    return tuple(blocks)


@cache
def _case(name: str) -> Case:
    for rel, type_name, rows in JAVA_CASES:
        if rel == name:
            data = (VECTORS / rel).read_bytes()
            probes, prefixes = _probes(_input_values(rows, type_name), type_name)
            return Case(name, data, type_name, probes, prefixes, _trailed_blocks(data, type_name))
    for rel, type_name, codec, block in OWN_CASES:
        if rel == name:
            return _own_case(rel, type_name, codec, block)
    raise KeyError(name)


def _own_case(name: str, type_name: str, codec: str, block: int) -> Case:
    n = 400
    if type_name == "string":
        keys: list[object] = [None if i % 17 == 0 else f"k{(i * 7919) % 97:03d}-{'x' * (i % 5)}"
                              for i in range(n)]
    else:
        scale = 1 << 40 if type_name == "bigint" else 1
        keys = [None if i % 13 == 0 else ((i * 7919) % 89 - 40) * scale for i in range(n)]
    kt = parse_type(type_name)
    data, _ = write_index_bytes(keys, list(range(n)), kt,
                                IndexOptions(dictionary_block_size=block, compression=codec,
                                             compression_level=3))
    probes, prefixes = _probes(keys, type_name)
    return Case(name, data, type_name, probes, prefixes, _trailed_blocks(data, type_name))


ALL_CASES = [
    pytest.param(name, marks=pytest.mark.slow) if name.startswith("java/str_many") else name
    for name in [c[0] for c in JAVA_CASES] + [c[0] for c in OWN_CASES]
]


# -- running every reader operation -------------------------------------------------------------

def _operations(case: Case) -> list[tuple[str, Callable[[object], object]]]:
    probes = case.probes
    mid = probes[len(probes) // 2] if probes else None
    ops: list[tuple[str, Callable[[object], object]]] = [
        ("null_rows", lambda r: r.null_rows()),
        ("non_null_rows", lambda r: r.non_null_rows()),
        ("eq", lambda r: [r.eq(v) for v in probes]),
        ("isin", lambda r: r.isin(probes)),
        ("range >", lambda r: r.range(low=mid, low_inclusive=False)),
        ("range <=", lambda r: r.range(high=mid)),
        ("range between", lambda r: r.range(probes[0], probes[-1]) if probes else None),
        ("entries", lambda r: list(r.entries())),
        ("value_counts", lambda r: list(r.value_counts())),
        ("scan", lambda r: r.scan(lambda v: True)),
    ]
    if case.type_name == "string":
        ops.append(("starts_with", lambda r: [r.starts_with(p) for p in case.prefixes]))
        ops.append(("value_counts prefix", lambda r: list(r.value_counts(case.prefixes[0]))))
    return ops


def _exercise(case: Case, data: bytes, size: int | None = None) -> list[str]:
    """Open `data` and run every operation; returns the names of the operations that failed cleanly.

    Anything but IndexFormatError propagates (test failure). Fresh readers per operation so a
    failure in one (e.g. the block index) does not hide the others behind a cached state.
    """
    kt = parse_type(case.type_name)
    failed = []
    for op_name, op in _operations(case):
        try:
            reader = open_index(BytesSource(data, f"fuzz/{case.name}"), kt, size=size)
            op(reader)
        except IndexFormatError:
            failed.append(op_name)
    return failed


def _guarded(case: Case, data: bytes, size: int | None = None) -> None:
    tracemalloc.reset_peak()
    start = time.process_time()  # CPU seconds: a hang or a loop shows, a busy machine does not
    _exercise(case, data, size)
    elapsed = time.process_time() - start
    _current, peak = tracemalloc.get_traced_memory()
    assert elapsed < MAX_SECONDS_PER_EXAMPLE, f"{case.name}: {elapsed:.1f} CPU s on a corrupted file"
    assert peak < MAX_PEAK_BYTES, f"{case.name}: {peak / 2**20:.0f} MiB allocated for a small file"


@pytest.fixture(scope="module", autouse=True)
def _trace_allocations():
    tracemalloc.start()
    yield
    tracemalloc.stop()


# -- mutations ----------------------------------------------------------------------------------

INTERESTING_INTS = [0, 1, 47, 48, 49, 127, 128, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, (1 << 62),
                    (1 << 63) - 1, -1, -(1 << 31), -(1 << 63)]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _with_trailer(body: bytes, type_id: int) -> bytes:
    # spec §2.4: CRC-32 (zlib) over stored body + type byte, little-endian
    return body + bytes([type_id]) + struct.pack("<I", zlib.crc32(body + bytes([type_id])))


def _replace_block(data: bytes, off: int, length: int, body: bytes, type_id: int) -> bytes:
    """Same-length replacement of a trailed block's body, with a valid CRC."""
    assert len(body) == length
    return data[:off] + _with_trailer(body, type_id) + data[off + length + 5:]


@st.composite
def mutations(draw: st.DrawFn, case: Case) -> Mutation:
    data = case.data
    n = len(data)
    kind = draw(st.sampled_from(["flip", "truncate", "extend", "size", "footer", "block_bytes",
                                 "block_varint", "block_type", "index_rewrite"]))
    if kind == "flip":
        buf = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            pos = draw(st.integers(0, n - 1))
            buf[pos] ^= draw(st.integers(1, 255))
        return Mutation(kind, bytes(buf))
    if kind == "truncate":
        cut = draw(st.integers(0, n - 1))
        return Mutation(kind, data[:cut], detail=f"cut at {cut}")
    if kind == "extend":
        return Mutation(kind, data + draw(st.binary(min_size=1, max_size=64)))
    if kind == "size":  # the manifest records a size that is not the file's
        return Mutation(kind, data, draw(st.one_of(st.integers(0, n - 1), st.integers(n + 1, n + 4096),
                                                   st.just(1 << 40))))
    if kind == "footer":
        field_off, fmt = draw(st.sampled_from(FOOTER_FIELDS))
        bits = 64 if fmt == ">q" else 32
        value = draw(st.one_of(st.sampled_from(INTERESTING_INTS), st.integers(-n, 2 * n)))
        value = ((value + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
        buf = bytearray(data)
        struct.pack_into(fmt, buf, n - 48 + field_off, value)
        return Mutation(kind, bytes(buf), detail=f"footer[{field_off}] = {value}")
    name, off, length = draw(st.sampled_from(case.trailed))
    type_id = data[off + length]
    body = bytearray(data[off:off + length])
    if kind == "block_type":
        new_type = draw(st.integers(0, 255))
        return Mutation(kind, _replace_block(data, off, length, bytes(body), new_type),
                        detail=f"{name} type {new_type}")
    if kind == "block_bytes" and length:
        pos = draw(st.integers(0, length - 1))
        patch = draw(st.binary(min_size=1, max_size=16))
        body[pos:pos + len(patch)] = patch[:length - pos]
        return Mutation(kind, _replace_block(data, off, length, bytes(body), type_id),
                        detail=f"{name} +{pos} = {patch.hex()}")
    if kind == "block_varint" and length:
        # an overlong varint or an extreme value over the bytes at some position (same length)
        pos = draw(st.integers(0, length - 1))
        patch = draw(st.one_of(st.just(b"\xff" * 11), st.just(b"\x80" * 10 + b"\x01"),
                               st.sampled_from([_varint(v) for v in INTERESTING_INTS if v >= 0]),
                               st.just(_varint(1 << 70))))
        body[pos:pos + len(patch)] = patch[:length - pos]
        return Mutation(kind, _replace_block(data, off, length, bytes(body), type_id),
                        detail=f"{name} +{pos} = {patch.hex()}")
    if kind == "index_rewrite" and data[case.trailed[0][1] + case.trailed[0][2]] == 0:
        return _rewrite_index_field(draw, case)
    return Mutation("none", data)


def _rewrite_index_field(draw: st.DrawFn, case: Case) -> Mutation:
    """Re-encode one varint of the (uncompressed) block index with another value.

    The index sits right before the footer in both physical orders (spec §2.1), so a longer or
    shorter body only moves the footer; the footer's index length and the CRC are fixed up.
    """
    data = case.data
    _name, off, length = case.trailed[0]
    body = data[off:off + length]
    fields: list[tuple[int, int]] = []  # (start, end) of every varint in the body
    pos = 0

    def take() -> int:
        nonlocal pos
        start, value, shift = pos, 0, 0
        while True:
            b = body[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                fields.append((start, pos))
                return value

    count = take()
    for _ in range(count):
        key_len = take()
        pos += key_len
        take()
        take()
    start, end = draw(st.sampled_from(fields))
    value = draw(st.one_of(st.sampled_from([v for v in INTERESTING_INTS if v >= 0]),
                           st.integers(0, 2 * len(data)), st.just(1 << 70)))
    new_body = body[:start] + _varint(value) + body[end:]
    footer = list(FOOTER.unpack(data[-48:]))
    footer[5] = len(new_body)
    return Mutation("index_rewrite", data[:off] + _with_trailer(new_body, 0) + FOOTER.pack(*footer),
                    detail=f"block index varint at +{start} = {value}")


# -- the property -------------------------------------------------------------------------------

@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ALL_CASES)
def test_pristine_files_answer_every_operation(name: str) -> None:
    case = _case(name)
    assert _exercise(case, case.data) == []


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ALL_CASES)
@pytest.mark.slow
def test_corrupted_files_raise_only_index_format_errors(name: str) -> None:
    case = _case(name)

    examples = EXAMPLES if len(case.data) < BIG_FILE else max(3, EXAMPLES // 8)

    @settings(max_examples=examples, deadline=None, derandomize=not RANDOM, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutation=mutations(case))
    def check(mutation: Mutation) -> None:
        _guarded(case, mutation.data, mutation.size)

    check()


# -- targeted damage: the right subclass, naming the file and the block ------------------------

def _golden() -> tuple[str, bytes]:
    return "str_many.none1.b16384.java.idx", (VECTORS / "java/str_many.none1.b16384.java.idx").read_bytes()


def _open(data: bytes, name: str = "t/str_many.idx", size: int | None = None):  # noqa: ANN202
    return open_index(BytesSource(data, name), parse_type("string"), size=size)


def _assert_names(exc: IndexFormatError, path: str, block: str) -> None:
    assert exc.path == path and path in str(exc)
    assert exc.block is not None and block in exc.block and block in str(exc)


def test_wrong_magic() -> None:
    _, data = _golden()
    bad = data[:-4] + b"BGIY"
    with pytest.raises(CorruptFileError) as info:
        _open(bad).eq("key-00001")
    assert type(info.value) is CorruptFileError
    _assert_names(info.value, "t/str_many.idx", "footer")
    assert "magic" in str(info.value)


def test_version_2() -> None:
    _, data = _golden()
    bad = data[:-8] + struct.pack(">i", 2) + data[-4:]
    with pytest.raises(UnsupportedVersionError) as info:
        _open(bad).eq("key-00001")
    _assert_names(info.value, "t/str_many.idx", "footer")
    assert "2" in info.value.reason


def test_crc_mismatch_in_block_index() -> None:
    _, data = _golden()
    f = FOOTER.unpack(data[-48:])
    crc_at = f[4] + f[5] + 1  # first CRC byte after the type byte
    bad = bytearray(data)
    bad[crc_at] ^= 0x01
    with pytest.raises(ChecksumError) as info:
        _open(bytes(bad)).eq("key-00001")
    _assert_names(info.value, "t/str_many.idx", "block index")


def test_crc_mismatch_in_dictionary_block() -> None:
    _, data = _golden()
    case_blocks = _trailed_blocks(data, "string")
    name, off, length = case_blocks[1]  # dictionary block 0
    bad = bytearray(data)
    bad[off + 3] ^= 0x20  # inside a key: only the CRC can notice
    reader = _open(bytes(bad))
    with pytest.raises(ChecksumError) as info:
        reader.eq("key-00001")
    _assert_names(info.value, "t/str_many.idx", name)
    assert reader.eq("key-05999")  # other blocks still answer


def test_file_shorter_than_footer() -> None:
    _, data = _golden()
    for size in (0, 1, 47):
        with pytest.raises(TruncatedFileError) as info:
            _open(data[-size:] if size else b"")
        _assert_names(info.value, "t/str_many.idx", "footer")


def test_truncated_file_with_manifest_size() -> None:
    _, data = _golden()
    with pytest.raises(TruncatedFileError) as info:
        _open(data[:-100], size=len(data))  # the manifest still records the full size
    _assert_names(info.value, "t/str_many.idx", "footer")


@pytest.mark.parametrize(("field", "block"), [(0, "null-rows"), (2, "non-null-rows"), (4, "block index")])
def test_footer_pointing_past_the_end(field: int, block: str) -> None:
    _, data = _golden()
    footer = list(FOOTER.unpack(data[-48:]))
    footer[field] = len(data) + 1000
    bad = data[:-48] + FOOTER.pack(*footer)
    with pytest.raises(CorruptFileError) as info:
        reader = _open(bad)
        reader.null_rows(), reader.non_null_rows(), reader.eq("key-00001")
    # The footer is checked when the file is opened: the error names the footer and the block it
    # points to. (TruncatedFileError would be the more precise subclass; see the issue notes.)
    exc = info.value
    assert exc.path == "t/str_many.idx" and "t/str_many.idx" in str(exc)
    assert block in str(exc) and exc.block is not None
