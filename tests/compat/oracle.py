"""Independent expectations for the compatibility tests: Java comparison rules written in plain Python.

Test helper only; uses no index_format code.
"""
from __future__ import annotations

import math
import struct
from collections import defaultdict


def _as_float(type_name: str, value: object) -> float:
    v = float(value)  # type: ignore[arg-type]
    if type_name == "float" and math.isfinite(v):
        v = struct.unpack("<f", struct.pack("<f", v))[0]  # Java parses FLOAT text to 32 bits
    return v


def identity(type_name: str, value: object) -> object:
    """Key identity under Java rules: all NaNs one key, -0.0 and 0.0 two keys."""
    if type_name in ("float", "double"):
        v = _as_float(type_name, value)
        if math.isnan(v):
            return ("NaN",)
        return (v, math.copysign(1.0, v))
    return value


def java_order(type_name: str, value: object) -> object:
    """Sort key matching Java's comparator (Double.compare for floating point, UTF-8 bytes for strings)."""
    if type_name in ("float", "double"):
        v = _as_float(type_name, value)
        if math.isnan(v):
            return (1, 0.0, 0.0)
        return (0, v, math.copysign(1.0, v))
    if type_name == "string":
        return str(value).encode("utf-8")
    return value


def expected_sets(type_name: str, rows: list[tuple[int, object]]):
    """(identity → row ids, null row ids, non-null row ids, identity → one representative value)."""
    sets: dict[object, set[int]] = defaultdict(set)
    rep: dict[object, object] = {}
    nulls: set[int] = set()
    non_null: set[int] = set()
    for rid, value in rows:
        if value is None:
            nulls.add(rid)
            continue
        non_null.add(rid)
        ident = identity(type_name, value)
        sets[ident].add(rid)
        rep.setdefault(ident, value)
    return dict(sets), nulls, non_null, rep
