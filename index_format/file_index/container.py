"""Paimon's file-index container (`fileindex/FileIndexFormat`, version 1): one blob per data file holding
any number of (column, index type) payloads behind a head that lists them (spec §1).

    long magic · int version = 1 · int headLength (from byte 0) · int columnCount
    per column: UTF name · int indexCount · per index: UTF indexType · int start · int length
    int redundantLength (0) · redundant bytes · BODY (the payloads; `start` is absolute, -1 = empty)

Names are Java modified UTF-8 (`DataOutput.writeUTF`). Readers find payloads only through `start`, so the
entry order matters only to a byte-exact writer (callers pass Java's HashMap order, see data_file_index).

Reading is defensive: every count and length is checked against the bytes that are there before anything
is looped over or sliced, and every problem is a CorruptFileError / TruncatedFileError /
UnsupportedVersionError naming the file and the part ("container head", "entry 'a'/'bitmap'").
"""
from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import NamedTuple

from index_format.errors import (
    BgixError,
    CorruptFileError,
    IndexFormatError,
    InvalidOptionError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from index_format.file_index import formats
from index_format.file_index.payload_reader import EmptyReader, PayloadReader
from index_format.layout import BE_I32, BE_U16, FILE_INDEX_PREFIX, be_u16s
from index_format.types import KeyType

__all__ = ["EMPTY_START", "MAGIC", "VERSION", "Container", "ContainerEntry", "decode_modified_utf8",
           "encode_modified_utf8", "read_container", "write_container"]

MAGIC = 1493475289347502          # 00 05 4E 4E D0 1A 35 AE
VERSION = 1
EMPTY_START = -1                  # FileIndexFormat.EMPTY_INDEX_FLAG: the writer produced nothing
_FIXED_HEAD = 8 + 4 + 4           # magic, version, headLength: the part before the counted head
_MAX_UTF = 0xFFFF                 # writeUTF's uint16 byte count
_INT_MAX = (1 << 31) - 1


# --- Java modified UTF-8 (DataOutputStream.writeUTF / DataInputStream.readUTF) -------------------------------

def encode_modified_utf8(text: str) -> bytes:
    """`writeUTF`'s bytes without the length: UTF-16 units, NUL as C0 80, each surrogate as 3 bytes."""
    out = bytearray()
    units = text.encode("utf-16-be", "surrogatepass")
    for (unit,) in BE_U16.iter_unpack(units):
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:  # includes U+0000
            out += bytes((0xC0 | unit >> 6, 0x80 | unit & 0x3F))
        else:
            out += bytes((0xE0 | unit >> 12, 0x80 | unit >> 6 & 0x3F, 0x80 | unit & 0x3F))
    return bytes(out)


def decode_modified_utf8(data: bytes | bytearray | memoryview) -> str:
    """`readUTF`'s decoding of the bytes after the length; ValueError on malformed input, like Java's
    UTFDataFormatException. Accepts what Java accepts (raw 00 bytes, overlong 2-byte forms); surrogate
    pairs become one character and an unpaired surrogate stays as it is."""
    raw = bytes(data)
    if raw.isascii():
        return raw.decode("ascii")
    units: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        kind = c >> 4
        if kind < 8:
            units.append(c)
            i += 1
        elif kind in (12, 13):
            if i + 1 >= n:
                raise ValueError("malformed input: partial character at end")
            c2 = raw[i + 1]
            if c2 & 0xC0 != 0x80:
                raise ValueError(f"malformed input around byte {i + 1}")
            units.append((c & 0x1F) << 6 | c2 & 0x3F)
            i += 2
        elif kind == 14:
            if i + 2 >= n:
                raise ValueError("malformed input: partial character at end")
            c2, c3 = raw[i + 1], raw[i + 2]
            if c2 & 0xC0 != 0x80 or c3 & 0xC0 != 0x80:
                raise ValueError(f"malformed input around byte {i + 2}")
            units.append((c & 0x0F) << 12 | (c2 & 0x3F) << 6 | c3 & 0x3F)
            i += 3
        else:
            raise ValueError(f"malformed input around byte {i}")
    return be_u16s(len(units)).pack(*units).decode("utf-16-be", "surrogatepass")


def _has_lone_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def _write_utf(out: bytearray, text: str, what: str) -> None:
    if _has_lone_surrogate(text):
        raise InvalidOptionError(f"{what} {text!r} is not valid Unicode (unpaired surrogate)")
    encoded = encode_modified_utf8(text)
    if len(encoded) > _MAX_UTF:
        raise InvalidOptionError(f"{what} {text[:40]!r}… is {len(encoded)} bytes in modified UTF-8; "
                                 f"the container stores at most {_MAX_UTF} (Java's writeUTF limit)")
    out += BE_U16.pack(len(encoded))
    out += encoded


# --- writer -------------------------------------------------------------------------------------------------

def write_container(columns: Mapping[str, Mapping[str, bytes | bytearray | memoryview | None]]) -> bytes:
    """FileIndexFormat.Writer.writeColumnIndexes: column → index type → payload (None = empty entry,
    start -1 and length 0), written in the mappings' iteration order.

    Raises:
        InvalidOptionError: a name longer than 65535 bytes in modified UTF-8, or not valid Unicode.
        IndexFormatError: the blob would not fit Java's int offsets.
    """
    names = bytearray()  # the counted head without the fixed ints: lets us know headLength up front
    entry_count = 0
    for column, indexes in columns.items():
        _write_utf(names, column, "column name")
        for index_type in indexes:
            _write_utf(names, index_type, "index type")
            entry_count += 1
    head_length = _FIXED_HEAD + 4 + 8 * entry_count + 4 * len(columns) + 4 + len(names)

    head = bytearray(FILE_INDEX_PREFIX.pack(MAGIC, VERSION, head_length))
    head += BE_I32.pack(len(columns))
    body: list[bytes | bytearray | memoryview] = []
    offset = head_length
    for column, indexes in columns.items():
        _write_utf(head, column, "column name")
        head += BE_I32.pack(len(indexes))
        for index_type, payload in indexes.items():
            _write_utf(head, index_type, "index type")
            if payload is None:
                head += BE_I32.pack(EMPTY_START) + BE_I32.pack(0)
                continue
            size = len(memoryview(payload).cast("B"))
            if offset + size > _INT_MAX:
                raise IndexFormatError("the container would exceed 2 GiB, beyond Java's int offsets",
                                       block=f"entry {column!r}/{index_type!r}")
            head += BE_I32.pack(offset) + BE_I32.pack(size)
            body.append(payload)
            offset += size
    head += BE_I32.pack(0)  # redundant length: nothing reserved in version 1
    assert len(head) == head_length
    return b"".join([bytes(head), *(bytes(p) for p in body)])


# --- reader -------------------------------------------------------------------------------------------------

class ContainerEntry(NamedTuple):
    """One head entry: `start` is absolute in the blob, or -1 (EMPTY_START) for an empty index."""

    column: str
    index_type: str
    start: int
    length: int

    @property
    def empty(self) -> bool:
        return self.start == EMPTY_START


class _Head:
    """A cursor over the counted head that turns every overrun into a typed error."""

    def __init__(self, view: memoryview, end: int, path: str | None) -> None:
        self.view, self.pos, self.end, self.path = view, _FIXED_HEAD, end, path

    def fail(self, reason: str, block: str, cls: type[IndexFormatError] = CorruptFileError) -> IndexFormatError:
        return cls(reason, path=self.path, block=block, offset=self.pos)

    def remaining(self) -> int:
        return self.end - self.pos

    def need(self, n: int, block: str, what: str) -> None:
        if self.remaining() < n:
            raise self.fail(f"{what} needs {n} bytes, only {self.remaining()} are left of the "
                            f"{self.end}-byte head", block)

    def int32(self, block: str, what: str) -> int:
        self.need(4, block, what)
        value: int = BE_I32.unpack_from(self.view, self.pos)[0]
        self.pos += 4
        return value

    def utf(self, block: str, what: str) -> str:
        self.need(2, block, f"the length of {what}")
        (size,) = BE_U16.unpack_from(self.view, self.pos)
        self.need(2 + size, block, what)
        raw = self.view[self.pos + 2:self.pos + 2 + size]
        try:
            text = decode_modified_utf8(raw)
        except ValueError as exc:
            raise self.fail(f"{what} is not modified UTF-8: {exc}", block) from None
        if _has_lone_surrogate(text):
            raise self.fail(f"{what} is not valid Unicode (unpaired surrogate)", block)
        self.pos += 2 + size
        return text


def _parse_head(view: memoryview, path: str | None) -> tuple[int, list[ContainerEntry]]:
    size = len(view)
    block = "container head"
    if size < _FIXED_HEAD:
        raise TruncatedFileError(f"{size} bytes, shorter than the {_FIXED_HEAD}-byte magic, version and "
                                 f"head length", path=path, block=block, offset=0)
    magic, version, head_length = FILE_INDEX_PREFIX.unpack_from(view, 0)
    if magic != MAGIC:
        raise CorruptFileError(f"magic {magic & 0xFFFFFFFFFFFFFFFF:#018x} is not the file-index magic "
                               f"{MAGIC:#018x}", path=path, block=block, offset=0)
    if version != VERSION:
        raise UnsupportedVersionError(f"container version {version}; this library reads version {VERSION}",
                                      path=path, block=block, offset=8)
    if head_length > size:
        raise TruncatedFileError(f"head length {head_length} runs past the end of the {size}-byte blob",
                                 path=path, block=block, offset=12)
    if head_length < _FIXED_HEAD + 8:  # a column count and a redundant length at least
        raise CorruptFileError(f"head length {head_length} is too small (at least {_FIXED_HEAD + 8})",
                               path=path, block=block, offset=12)

    cur = _Head(view, head_length, path)
    count = cur.int32(block, "the column count")
    # each column takes at least 6 bytes (empty name + index count): bounds the loop by the bytes present
    if count < 0 or count * 6 > cur.remaining() - 4:
        raise cur.fail(f"column count {count} does not fit the {head_length}-byte head", block)
    entries: list[ContainerEntry] = []
    for c in range(count):
        column = cur.utf(block, f"the name of column {c + 1}")
        cblock = f"column {column!r}"
        n = cur.int32(cblock, "the index count")
        if n < 0 or n * 10 > cur.remaining() - 4:  # each entry: empty name + start + length
            raise cur.fail(f"index count {n} does not fit the rest of the head", cblock)
        for _ in range(n):
            index_type = cur.utf(cblock, "an index type")
            eblock = f"entry {column!r}/{index_type!r}"
            start = cur.int32(eblock, "the payload start")
            length = cur.int32(eblock, "the payload length")
            if start == EMPTY_START:
                if length != 0:
                    raise cur.fail(f"an empty entry (start -1) has length {length}, not 0", eblock)
            elif start < head_length or length < 0:
                raise cur.fail(f"payload [{start}, {start}+{length}) is not inside the body "
                               f"[{head_length}, {size})", eblock)
            elif start + length > size:
                raise cur.fail(f"payload [{start}, {start + length}) runs past the end of the "
                               f"{size}-byte blob", eblock, TruncatedFileError)
            entries.append(ContainerEntry(column, index_type, start, length))
    redundant = cur.int32(block, "the redundant length")
    if redundant != cur.remaining():
        raise cur.fail(f"redundant length {redundant} does not match the {cur.remaining()} bytes left "
                       f"in the head", block)
    return head_length, entries


class Container:
    """A parsed container. `entries` lists the head in file order; lookups follow Java's reader, where a
    repeated (column, index type) keeps the last entry."""

    def __init__(self, data: bytes | bytearray | memoryview, *, path: str | None = None) -> None:
        self.data = memoryview(data).cast("B")
        self.path = path
        self.size = len(self.data)
        self.head_length, self.entries = _parse_head(self.data, path)
        self._by_column: dict[str, dict[str, ContainerEntry]] = {}
        for e in self.entries:
            self._by_column.setdefault(e.column, {})[e.index_type] = e

    @property
    def columns(self) -> list[str]:
        """Column names (map keys as `m[k]`) in head order."""
        return list(self._by_column)

    def index_types(self, column: str) -> list[str]:
        return list(self._by_column.get(column, {}))

    def entry(self, column: str, index_type: str) -> ContainerEntry | None:
        return self._by_column.get(column, {}).get(index_type)

    def payload(self, column: str, index_type: str) -> memoryview | None:
        """The payload bytes; None when there is no such entry or it is empty (start -1)."""
        e = self.entry(column, index_type)
        if e is None or e.empty:
            return None
        return self.data[e.start:e.start + e.length]

    def readers(self, column: str, kt: KeyType) -> list[PayloadReader]:
        """One reader per index of `column` (none if it has no index), as Java's readColumnIndex creates
        them: EmptyReader for an empty entry, otherwise the format's reader for the column type `kt`.

        Raises:
            UnsupportedVersionError: an index type this library does not know.
            CorruptFileError / TruncatedFileError: a payload that does not decode.
            UnsupportedTypeError: the index type cannot hold `kt`.
        """
        return [self._reader(e, kt) for e in self._by_column.get(column, {}).values()]

    def _reader(self, e: ContainerEntry, kt: KeyType) -> PayloadReader:
        block = f"entry {e.column!r}/{e.index_type!r}"
        if e.empty:
            return EmptyReader(e.index_type, kt)
        if e.index_type not in formats.INDEX_TYPES:
            raise UnsupportedVersionError(
                f"unknown index type {e.index_type!r} (this library reads {', '.join(formats.INDEX_TYPES)})",
                path=self.path, block=block)
        payload = self.data[e.start:e.start + e.length]
        try:
            return formats.open_payload(e.index_type, payload, kt, path=self.path)
        except IndexFormatError as exc:
            raise _in_entry(exc, self.path, block, e.start) from exc
        except BgixError:
            raise
        except (ValueError, IndexError, KeyError, OverflowError, MemoryError, struct.error) as exc:
            raise CorruptFileError(f"payload does not decode: {type(exc).__name__}: {exc}",
                                   path=self.path, block=block, offset=e.start) from exc

    def describe(self) -> dict[str, object]:
        """JSON-ready summary of the head."""
        return {
            "version": VERSION,
            "size": self.size,
            "head_length": self.head_length,
            "columns": self.columns,
            "entries": [{"column": e.column, "index_type": e.index_type, "start": e.start,
                         "length": e.length, "empty": e.empty} for e in self.entries],
        }


def _in_entry(exc: IndexFormatError, path: str | None, block: str, start: int) -> IndexFormatError:
    """The payload reader's error, placed inside its container entry (block prefixed, offset absolute)."""
    inner = f"{block}: {exc.block}" if exc.block else block
    offset = start + exc.offset if exc.offset is not None else start
    try:
        return type(exc)(exc.reason, path=exc.path or path, block=inner, offset=offset)
    except TypeError:  # a subclass with another constructor: keep it as it is
        return exc


def read_container(data: bytes | bytearray | memoryview, *, path: str | None = None) -> Container:
    """Parse a container's head (payloads are decoded only when their readers are asked for).

    Raises:
        TruncatedFileError: the blob is shorter than its head or an entry says.
        CorruptFileError: bad magic or a head that does not add up.
        UnsupportedVersionError: a version other than 1.
    """
    return Container(data, path=path)
