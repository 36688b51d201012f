"""Ground truth and read-back for writer tests: key → row-id sets from the input, and from a written file."""
from __future__ import annotations

from index_format import open_index, parse_type
from index_format.storage import BytesSource


def truth(keys: list, rids: list) -> tuple[dict, set]:
    """(key → set of row ids, set of null rows) of the input, in plain Python."""
    sets: dict = {}
    nulls = set()
    for k, r in zip(keys, rids):
        if k is None:
            nulls.add(r)
        else:
            sets.setdefault(k, set()).add(r)
    return sets, nulls


def read_sets(data: bytes, type_text: str) -> tuple[dict, set]:
    """The same shape read back from a file's bytes with our reader."""
    r = open_index(BytesSource(data), parse_type(type_text))
    return {v: set(r.bitmap_at(o, n)) for v, o, n in r.located_entries()}, set(r.null_rows())
