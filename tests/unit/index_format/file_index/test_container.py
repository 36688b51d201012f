"""The FileIndexFormat container and Paimon's data-file index writer against the Java-written containers in
tests/data/file_index/container: parsing, byte-exact rebuilding from the input rows and table options,
Java modified UTF-8, corruption (every flip and cut is typed), and FileIndexOptions' parsing rules.
"""
from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index_format.errors import (
    CorruptFileError,
    IndexFormatError,
    InvalidOptionError,
    TruncatedFileError,
    UnsupportedTypeError,
    UnsupportedVersionError,
)
from index_format.file_index import formats
from index_format.file_index.container import (
    MAGIC,
    decode_modified_utf8,
    encode_modified_utf8,
    read_container,
    write_container,
)
from index_format.file_index.data_file_index import parse_file_index_options, write_data_file_index
from index_format.file_index.payload_reader import EmptyReader
from index_format.file_index.values import paimon_type
from tests.file_index_vectors import FILE_INDEX, VectorEntry, load_table, load_vectors

CONTAINERS = load_vectors(index_type="container")
DIR = FILE_INDEX / "container"

# The heads of the reference files (column, index type, start, length), as Java wrote them.
EXPECTED = {
    "abc.java.idx": (118, [("a", "bloom-filter", 118, 124), ("a", "bitmap", 242, 8250),
                           ("b", "range-bitmap", 8492, 56451), ("c", "bsi", 64943, 30087)]),
    "map_nested.java.idx": (130, [("m[k2]", "bloom-filter", 130, 43), ("m[k1]", "bloom-filter", 173, 43),
                                  ("m[k1]", "bitmap", 216, 268), ("id", "bitmap", 484, 510)]),
    "empty_rows.java.idx": (81, [("m[k1]", "bloom-filter", -1, 0), ("id", "bitmap", 81, 18)]),
}


def _arrow_type(spelling: str) -> pa.DataType:
    s = spelling.upper().replace(" ", "")
    if s.startswith("MAP<"):
        key, value = s[4:-1].split(",")
        return pa.map_(_arrow_type(key), _arrow_type(value))
    return {"STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32()}[s]


def _table(v: VectorEntry) -> tuple[pa.Table, list[tuple[str, str]]]:
    cols, rows = load_table(v.input)
    arrays = []
    for i, (_, typ) in enumerate(cols):
        values = [r[i] for r in rows]
        if typ.upper().startswith("MAP"):
            values = [None if m is None else list(m.items()) for m in values]
        arrays.append(pa.array(values, type=_arrow_type(typ)))
    return pa.Table.from_arrays(arrays, names=[n for n, _ in cols]), cols


def _kt(schema: list[tuple[str, str]], column: str):  # type: ignore[no-untyped-def]
    types = dict(schema)
    if column in types:
        return paimon_type(types[column])
    top = column[:column.index("[")]
    return paimon_type(types[top].upper().replace(" ", "")[len("MAP<STRING,"):-1])


# --- (a) parsing the reference containers ----------------------------------------------------------------

@pytest.mark.parametrize("v", CONTAINERS, ids=lambda v: v.file.name)
def test_reference_heads(v: VectorEntry) -> None:
    data = v.file.read_bytes()
    c = read_container(data, path=str(v.file))
    head_length, entries = EXPECTED[v.file.name]
    assert data[:8] == MAGIC.to_bytes(8, "big")
    assert c.head_length == head_length
    assert [tuple(e) for e in c.entries] == entries
    assert c.size == len(data) == v.size
    for column, index_type, start, length in entries:
        payload = c.payload(column, index_type)
        if start == -1:
            assert payload is None
        else:
            assert bytes(payload) == data[start:start + length]
    doc = c.describe()
    assert doc["head_length"] == head_length and doc["columns"] == list(dict.fromkeys(e[0] for e in entries))
    assert [(e["column"], e["index_type"], e["start"], e["length"], e["empty"]) for e in doc["entries"]] \
        == [(*e, e[2] == -1) for e in entries]
    assert c.payload("nope", "bitmap") is None and c.readers("nope", paimon_type("INT")) == []


@pytest.mark.parametrize("v", CONTAINERS, ids=lambda v: v.file.name)
def test_reference_heads_rewritten_byte_for_byte(v: VectorEntry) -> None:
    """write_container over the parsed payloads, in file order, gives Java's bytes back."""
    data = v.file.read_bytes()
    c = read_container(data)
    columns: dict[str, dict[str, bytes | None]] = {}
    for e in c.entries:
        columns.setdefault(e.column, {})[e.index_type] = c.payload(e.column, e.index_type)
    assert write_container(columns) == data


@pytest.mark.parametrize("v", CONTAINERS, ids=lambda v: v.file.name)
def test_reference_readers(v: VectorEntry) -> None:
    c = read_container(v.file.read_bytes(), path=str(v.file))
    schema = [(n, t) for n, t in load_table(v.input)[0]]
    for column in c.columns:
        readers = c.readers(column, _kt(schema, column))
        assert [r.index_type for r in readers] == c.index_types(column)
        for e, r in zip([e for e in c.entries if e.column == column], readers):
            assert isinstance(r, EmptyReader) == e.empty
            r.describe()


def test_unknown_index_type_fails_only_when_its_reader_is_asked_for() -> None:
    data = write_container({"a": {"future-index": b"\x01\x02"}, "b": {"bitmap": None}})
    c = read_container(data, path="x.index")
    assert [(e.column, e.index_type) for e in c.entries] == [("a", "future-index"), ("b", "bitmap")]
    assert bytes(c.payload("a", "future-index")) == b"\x01\x02"
    assert isinstance(c.readers("b", paimon_type("INT"))[0], EmptyReader)
    with pytest.raises(UnsupportedVersionError) as info:
        c.readers("a", paimon_type("INT"))
    assert info.value.path == "x.index" and info.value.block == "entry 'a'/'future-index'"


def test_write_container_layout() -> None:
    data = write_container({"é": {"bitmap": b"xyz", "bsi": None}, "b": {}})
    # head: 16 fixed + 4 count + (2+2 "é" + 4 + (2+6+8) + (2+3+8)) + (2+1 + 4) + 4 redundant
    head = 16 + 4 + (4 + 4 + 16 + 13) + 7 + 4
    assert struct.unpack_from(">qiii", data) == (MAGIC, 1, head, 2)
    assert data[20:24] == b"\x00\x02\xc3\xa9"
    assert data[head:] == b"xyz"
    c = read_container(data)
    assert [tuple(e) for e in c.entries] == [("é", "bitmap", head, 3), ("é", "bsi", -1, 0)]
    assert c.columns == ["é"]  # a column without indexes has no entries
    assert write_container({}) == struct.pack(">qiiii", MAGIC, 1, 24, 0, 0)
    assert read_container(write_container({})).entries == []


def test_repeated_entries_keep_the_last_like_java() -> None:
    # column a listed twice (Java's reader merges them), and index type bitmap twice inside one column
    size = len(_head([("a", [("bitmap", 0, 1)]), ("a", [("bitmap", 0, 1), ("bitmap", 0, 1)])]))
    blob = bytes(_head([("a", [("bitmap", size, 1)]), ("a", [("bitmap", size + 1, 1), ("bitmap", size + 2, 1)])]))
    c = read_container(blob + b"123")
    assert len(c.entries) == 3 and c.columns == ["a"] and bytes(c.payload("a", "bitmap")) == b"3"


# --- modified UTF-8 ------------------------------------------------------------------------------------------

def _cesu8(text: str) -> bytes:
    """Independent oracle: every UTF-16 unit as (surrogate-passing) UTF-8, NUL as C0 80."""
    units = struct.unpack(f">{len(text.encode('utf-16-be', 'surrogatepass')) // 2}H",
                          text.encode("utf-16-be", "surrogatepass"))
    return b"".join(b"\xc0\x80" if u == 0 else chr(u).encode("utf-8", "surrogatepass") for u in units)


@pytest.mark.parametrize("text, encoded", [
    ("", b""), ("abc", b"abc"), ("\x00", b"\xc0\x80"), ("\x7f", b"\x7f"), ("\x80", b"\xc2\x80"),
    ("\u07ff", b"\xdf\xbf"), ("\u0800", b"\xe0\xa0\x80"), ("\uffff", b"\xef\xbf\xbf"),
    ("😀", b"\xed\xa0\xbd\xed\xb8\x80"), ("m[k\x001]", b"m[k\xc0\x801]"),
])
def test_modified_utf8_known(text: str, encoded: bytes) -> None:
    assert encode_modified_utf8(text) == encoded
    assert decode_modified_utf8(encoded) == text


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_modified_utf8_round_trip(text: str) -> None:
    encoded = encode_modified_utf8(text)
    assert encoded == _cesu8(text)
    assert b"\x00" not in encoded and all(b < 0xF0 for b in encoded)
    assert decode_modified_utf8(encoded) == text


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=20), st.dictionaries(st.text(max_size=12), st.binary(max_size=8),
                                                          min_size=1, max_size=4))
def test_container_round_trip_names(column: str, indexes: dict[str, bytes]) -> None:
    c = read_container(write_container({column: indexes}))
    assert [(e.column, e.index_type) for e in c.entries] == [(column, t) for t in indexes]
    for t, payload in indexes.items():
        assert bytes(c.payload(column, t)) == payload


def test_modified_utf8_accepts_what_java_accepts() -> None:
    assert decode_modified_utf8(b"a\x00b") == "a\x00b"     # a raw NUL byte is read as U+0000
    assert decode_modified_utf8(b"\xc1\x81") == "A"         # overlong 2-byte forms too
    for bad in (b"\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98\x80", b"\xc3\x28", b"\xff"):
        with pytest.raises(ValueError):
            decode_modified_utf8(bad)


def test_names_too_long_or_not_unicode() -> None:
    write_container({"x" * 65535: {"bitmap": b""}})
    with pytest.raises(InvalidOptionError, match="65535"):
        write_container({"x" * 65536: {"bitmap": b""}})
    with pytest.raises(InvalidOptionError, match="65535"):
        write_container({"a": {"é" * 32768: b""}})  # 65536 encoded bytes
    with pytest.raises(InvalidOptionError, match="surrogate"):
        write_container({"\ud800": {"bitmap": b""}})


# --- (c) corruption ------------------------------------------------------------------------------------------

def _probe(data: bytes, path: str, schema: list[tuple[str, str]]) -> None:
    c = read_container(data, path=path)
    c.describe()
    known = {n for n, _ in schema}
    for column in c.columns:
        top = column.split("[")[0]
        if top not in known or (column != top and not column.endswith("]")):
            continue
        try:
            kt = _kt(schema, column)
        except KeyError:
            continue
        for r in c.readers(column, kt):
            r.describe()


@pytest.mark.parametrize("name", ["map_nested.java.idx", "empty_rows.java.idx"])
def test_every_flip_and_cut_is_typed(name: str) -> None:
    path = str(DIR / name)
    data = (DIR / name).read_bytes()
    schema = load_table(DIR / name.replace(".java.idx", ".tsv"))[0]
    _probe(data, path, schema)
    failures = []
    for pos in range(len(data) + 1):
        cases = [("cut", data[:pos])]
        if pos < len(data):
            cases += [(f"xor{m:02x}", data[:pos] + bytes([data[pos] ^ m]) + data[pos + 1:])
                      for m in (0x01, 0x80, 0xFF)]
        for case, blob in cases:
            try:
                _probe(blob, path, schema)
            except (CorruptFileError, UnsupportedVersionError) as exc:  # TruncatedFileError is a CorruptFileError
                if exc.path != path or not exc.block:
                    failures.append(f"{case}@{pos}: error without file or part: {exc!r}")
            except Exception as exc:  # noqa: BLE001 - the point is to catch every other kind
                failures.append(f"{case}@{pos}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures[:20])


def _head(columns: list[tuple[str, list[tuple[str, int, int]]]], redundant: int = 0,
          extra: bytes = b"") -> bytearray:
    """A container head: (column, [(index type, start, length)]) as given, duplicates included."""
    body = bytearray(struct.pack(">i", len(columns)))
    for c, items in columns:
        body += struct.pack(">H", len(c)) + c.encode() + struct.pack(">i", len(items))
        for t, s, n in items:
            body += struct.pack(">H", len(t)) + t.encode() + struct.pack(">ii", s, n)
    body += struct.pack(">i", redundant) + extra
    return bytearray(struct.pack(">qii", MAGIC, 1, 16 + len(body))) + body


def _one(start: int, length: int, **kw: object) -> bytes:
    return bytes(_head([("a", [("bitmap", start, length)])], **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("blob, error, block", [
    (b"", TruncatedFileError, "container head"),
    (MAGIC.to_bytes(8, "big") + b"\x00\x00\x00\x01", TruncatedFileError, "container head"),
    (b"\x00" * 24, CorruptFileError, "container head"),
    (struct.pack(">qiiii", MAGIC, 2, 24, 0, 0), UnsupportedVersionError, "container head"),
    (struct.pack(">qiiii", MAGIC, 1, 28, 0, 0), TruncatedFileError, "container head"),
    (struct.pack(">qiiii", MAGIC, 1, 16, 0, 0), CorruptFileError, "container head"),
    (struct.pack(">qiiii", MAGIC, 1, -5, 0, 0), CorruptFileError, "container head"),
    (struct.pack(">qiiii", MAGIC, 1, 24, 0x7FFFFFFF, 0), CorruptFileError, "container head"),
    (struct.pack(">qiiii", MAGIC, 1, 24, -1, 0), CorruptFileError, "container head"),
    (struct.pack(">qiiii", MAGIC, 1, 24, 0, 7), CorruptFileError, "container head"),
    (_one(10, 1) + b"x", CorruptFileError, "entry 'a'/'bitmap'"),
    (_one(47, 2) + b"x", TruncatedFileError, "entry 'a'/'bitmap'"),
    (_one(47, -1) + b"x", CorruptFileError, "entry 'a'/'bitmap'"),
    (_one(-1, 3), CorruptFileError, "entry 'a'/'bitmap'"),
    (_one(47, 1, redundant=1) + b"x", CorruptFileError, "container head"),
    (_one(49, 1, redundant=2, extra=b"zz") + b"x", None, None),
], ids=["empty", "short", "bad-magic", "version-2", "head-past-end", "head-too-small", "head-negative",
        "column-count-huge", "column-count-negative", "redundant-past-head", "payload-in-head", "payload-past-end",
        "length-negative", "empty-with-length", "redundant-mismatch", "redundant-bytes-ok"])
def test_malformed_heads(blob: bytes, error: type[IndexFormatError] | None, block: str | None) -> None:
    if error is None:
        c = read_container(blob, path="f.index")
        assert bytes(c.payload("a", "bitmap")) == b"x"
        return
    with pytest.raises(error) as info:
        read_container(blob, path="f.index")
    assert type(info.value) is error and info.value.path == "f.index" and info.value.block == block


def test_huge_counts_are_refused_before_looping() -> None:
    blob = bytearray(_one(-1, 0))
    struct.pack_into(">i", blob, 20 + 3, 0x7FFFFFFF)  # the index count of column a
    with pytest.raises(CorruptFileError, match="index count") as info:
        read_container(bytes(blob), path="p")
    assert info.value.block == "column 'a'"


def test_bad_names_are_typed() -> None:
    blob = bytearray(_one(-1, 0))
    blob[22] = 0x80  # the column name's only byte: a continuation byte on its own
    with pytest.raises(CorruptFileError, match="modified UTF-8"):
        read_container(bytes(blob), path="p")
    blob[22] = 0xED
    blob = blob[:22] + b"\xed\xa0\x80" + blob[23:]  # an unpaired surrogate
    struct.pack_into(">H", blob, 20, 3)
    struct.pack_into(">i", blob, 12, len(blob))
    with pytest.raises(CorruptFileError, match="surrogate"):
        read_container(bytes(blob), path="p")


# --- (b) byte-exact rebuilding ------------------------------------------------------------------------------

@pytest.mark.parametrize("v", CONTAINERS, ids=lambda v: v.file.name)
def test_rebuilt_byte_for_byte(v: VectorEntry) -> None:
    table, schema = _table(v)
    assert write_data_file_index(table, schema, v.options) == v.file.read_bytes()


def test_default_schema_from_arrow() -> None:
    v = next(v for v in CONTAINERS if v.file.name == "map_nested.java.idx")
    table, _ = _table(v)
    assert write_data_file_index(table, None, v.options) == v.file.read_bytes()


# --- (d) options ------------------------------------------------------------------------------------------

def test_parse_options_shapes() -> None:
    parsed = parse_file_index_options({
        "file-index.bitmap.columns": " b , a,m[k1],",   # trimmed, trailing empty dropped
        "file-index.bloom-filter.columns": "m[k1],m[k2]",
        "file-index.bloom-filter.m.items": "50",        # every key of m
        "file-index.bloom-filter.m[k2].items": "7",      # one key: wins
        "file-index.bitmap.a.index-block-size": "1kb",
        "file-index.bitmap.a": "ignored (two parts)",
        "file-index.bitmap.m[k.1].x": "ignored (four parts)",
        "file-index.in-manifest-threshold": "1",
        "bucket": "4",
    })
    cols = {c.name: c for c in parsed.columns}
    assert set(cols) == {"a", "b", "m[k1]", "m[k2]"}
    assert cols["a"].index_types == {"bitmap": {"index-block-size": "1kb"}}
    assert cols["b"].index_types == {"bitmap": {}}
    assert (cols["m[k1]"].column, cols["m[k1]"].map_key) == ("m", "k1")
    assert cols["m[k1]"].index_types == {"bloom-filter": {}, "bitmap": {}}  # HashMap order: bloom, bitmap
    assert cols["m[k2]"].index_types == {"bloom-filter": {"items": "7"}}
    assert parsed.map_options == {("m", "bloom-filter"): {"items": "50"}, ("m", "bitmap"): {}}
    assert [c.name for c in parsed.columns if c.map_key is None] == ["a", "b"]  # Column hash order
    assert parse_file_index_options({"bucket": "1", "file-index.bitmap.columns": ","}).empty


@pytest.mark.parametrize("options, match", [
    ({"file-index.bitmap.columns": "a,,b"}, "should not have empty column"),
    ({"file-index.bitmap.columns": " "}, "should not have empty column"),
    ({"file-index.bitmap.columns": ""}, "should not have empty column"),
    ({"file-index.columns": "a"}, "names no index type"),
    ({"file-index.bitmap.columns": "a", "file-index.bitmap.b.x": "1"},
     "column 'b' is not declared in 'file-index.bitmap.columns'"),
    ({"file-index.bitmap.columns": "a", "file-index.bsi.a.x": "1"},
     "column 'a' is not declared in 'file-index.bsi.columns'"),
    ({"file-index.bitmap.columns": "m[k1]", "file-index.bloom-filter.m.items": "1"}, "map-column"),
])
def test_parse_options_errors(options: dict[str, str], match: str) -> None:
    with pytest.raises(InvalidOptionError, match=match):
        parse_file_index_options(options)


def _capture(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, list[object], dict[str, str]]]:
    calls: list[tuple[str, str, list[object], dict[str, str]]] = []

    def fake(index_type, kt, values, options=None):  # type: ignore[no-untyped-def]
        calls.append((index_type, kt.spelling, values.to_pylist(), dict(options or {})))
        return f"{index_type}:{len(values)}".encode()
    monkeypatch.setattr(formats, "write_payload", fake)
    return calls


def test_map_key_values_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _capture(monkeypatch)
    table = pa.table({"m": pa.array([[("k1", "a"), ("k2", "b")], None, [("k2", "c")], [], [("k1", None)]],
                                    type=pa.map_(pa.string(), pa.string())),
                      "x": pa.array([1, 2, 3, 4, 5], type=pa.int64())})
    data = write_data_file_index(table, None, {
        "file-index.bloom-filter.columns": "m[k1],m[k2],x",
        "file-index.bloom-filter.m.items": "10", "file-index.bloom-filter.m.fpp": "0.5",
        "file-index.bloom-filter.m[k2].items": "20"})
    got = {(c[2] and c[1], tuple(c[2])): c[3] for c in calls}
    assert got == {
        ("string", ("a", None, None, None, None)): {"items": "10", "fpp": "0.5"},
        ("string", ("b", None, "c", None, None)): {"items": "20", "fpp": "0.5"},
        ("bigint", (1, 2, 3, 4, 5)): {},
    }
    c = read_container(data)
    assert {(e.column, e.index_type) for e in c.entries} == {("m[k1]", "bloom-filter"), ("m[k2]", "bloom-filter"),
                                                             ("x", "bloom-filter")}
    assert bytes(c.payload("m[k1]", "bloom-filter")) == b"bloom-filter:5"


def test_zero_rows_map_keys_are_empty_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _capture(monkeypatch)
    table = pa.table({"m": pa.array([], type=pa.map_(pa.string(), pa.int32())), "x": pa.array([], pa.int32())})
    c = read_container(write_data_file_index(table, [("m", "MAP<VARCHAR(10) NOT NULL, INT>"), ("x", "INT")],
                                             {"file-index.bitmap.columns": "m[a],x"}))
    assert {(e.column, e.start) for e in c.entries} == {("m[a]", -1), ("x", c.head_length)}
    assert calls == [("bitmap", "int", [], {})]


def test_writer_errors() -> None:
    table = pa.table({"a": pa.array([1], pa.int32()),
                      "m": pa.array([[(1, "x")]], type=pa.map_(pa.int32(), pa.string()))})
    assert write_data_file_index(table, None, {"bucket": "2"}) is None
    with pytest.raises(InvalidOptionError, match="zz does not exist in column fields"):
        write_data_file_index(table, None, {"file-index.bitmap.columns": "zz"})
    with pytest.raises(InvalidOptionError, match="unknown file index type"):
        write_data_file_index(table, None, {"file-index.bitmapp.columns": "a"})
    with pytest.raises(InvalidOptionError, match="not map type"):
        write_data_file_index(table, None, {"file-index.bitmap.columns": "a[k]"})
    with pytest.raises(UnsupportedTypeError, match="CHAR, VARCHAR or STRING keys"):
        write_data_file_index(table, None, {"file-index.bitmap.columns": "m[k]"})
    with pytest.raises(UnsupportedTypeError, match=r"index its keys as m\[key\]"):
        write_data_file_index(table, None, {"file-index.bitmap.columns": "m"})
    with pytest.raises(InvalidOptionError, match="not in the data"):
        write_data_file_index(table, [("a", "INT"), ("b", "INT")], {"file-index.bitmap.columns": "b"})
