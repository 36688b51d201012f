"""Test helpers for btree files: the pypaimon-rust reference vectors (tests/data/btree), pypaimon's own btree
writer, and plain-Python ground truth over (row id, value) rows. Uses no index_format code for the truth."""
from __future__ import annotations

import csv
import datetime as dt
import decimal
import math
import os
import struct
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.globalindex.btree.btree_index_writer import BTreeIndexWriter
from pypaimon.globalindex.key_serializer import create_serializer
from pypaimon.schema.data_types import AtomicType

from tests.data import BTREE

Rows = list[tuple[int, object]]


@dataclass(frozen=True)
class Vector:
    file: Path
    input: Path
    type: str
    version: int
    compression: str
    block_size: int

    @property
    def id(self) -> str:
        return self.file.name


def load_vectors() -> list[Vector]:
    with open(BTREE / "vectors.tsv", newline="", encoding="utf-8") as fh:
        return [Vector(BTREE / r["file"], BTREE / r["input"], r["type"], int(r["version"]), r["compression"],
                       int(r["block_size"])) for r in csv.DictReader(fh, delimiter="\t")]


def parse_value(type_name: str, text: str) -> object:
    if text == "NULL":
        return None
    if type_name == "string":
        return text
    if type_name in ("double", "float"):
        return float(text)
    if type_name == "date":
        return dt.date.fromisoformat(text)
    if type_name.startswith("timestamp"):
        return dt.datetime.fromisoformat(text)
    if type_name.startswith("decimal"):
        return decimal.Decimal(text)
    return int(text)


def load_rows(v: Vector) -> Rows:
    rows = []
    with open(v.input, encoding="utf-8", newline="\n") as fh:
        for line in fh.read().split("\n"):
            if line:
                rid, _, value = line.partition("\t")
                rows.append((int(rid), parse_value(v.type, value)))
    return rows


def _float32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0] if math.isfinite(v) else v


def identity(type_name: str, value: object) -> object:
    """Key identity under Java rules: every NaN one key, -0.0 and 0.0 two keys."""
    if type_name in ("float", "double"):
        v = float(value)  # type: ignore[arg-type]
        if type_name == "float":
            v = _float32(v)
        return ("NaN",) if math.isnan(v) else (v, math.copysign(1.0, v))
    return value


def java_order(type_name: str, value: object) -> object:
    """Sort key of Java's comparator: Double.compare for floating point, unsigned UTF-8 bytes for strings."""
    if type_name in ("float", "double"):
        v = float(value)  # type: ignore[arg-type]
        return (1, 0.0, 0.0) if math.isnan(v) else (0, v, math.copysign(1.0, v))
    if type_name == "string":
        return str(value).encode("utf-8")
    return value


def truth(type_name: str, rows: Rows) -> tuple[dict[object, set[int]], set[int], dict[object, object]]:
    """(identity → row ids, null row ids, identity → one value)."""
    sets: dict[object, set[int]] = defaultdict(set)
    rep: dict[object, object] = {}
    nulls: set[int] = set()
    for rid, value in rows:
        if value is None:
            nulls.add(rid)
        else:
            ident = identity(type_name, value)
            sets[ident].add(rid)
            rep.setdefault(ident, value)
    return dict(sets), nulls, rep


def where(type_name: str, rows: Rows, test) -> set[int]:  # type: ignore[no-untyped-def]
    """Rows whose non-null value passes `test(java_order(value))`."""
    return {rid for rid, v in rows if v is not None and test(java_order(type_name, v))}


# bgix type → pypaimon's type spelling
PAIMON_TYPES = {"string": "STRING", "boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT",
                "int": "INT", "bigint": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "date": "DATE",
                "timestamp(3)": "TIMESTAMP(3)", "timestamp(6)": "TIMESTAMP(6)", "decimal(10,2)": "DECIMAL(10,2)",
                "decimal(20,3)": "DECIMAL(20,3)"}


def pypaimon_write(tmp: Path, type_name: str, rows: Rows, block_size: int, *, bloom: bool = False
                   ) -> tuple[bytes, bytes]:
    """(file bytes, manifest meta) of pypaimon's BTreeIndexWriter fed the rows as Paimon's build feeds it:
    nulls, then non-null rows by (Java order of the key, row id)."""
    ser = create_serializer(AtomicType(PAIMON_TYPES[type_name]))
    out = tmp / f"pypaimon-{len(list(tmp.iterdir()))}"
    out.mkdir()
    w = BTreeIndexWriter(LocalFileIO(), str(out), ser, block_size=block_size, bloom_filter_enabled=bloom)
    for rid, _ in sorted((r, v) for r, v in rows if v is None):
        w.write(None, rid)
    for _, rid, value in sorted((java_order(type_name, v), r, v) for r, v in rows if v is not None):
        w.write(value, rid)
    entry = w.finish()[0]
    path = out / os.path.basename(w.file_name)
    return path.read_bytes(), entry.meta
