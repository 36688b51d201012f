"""Corruption fuzzing over every file-index reference file: each flipped byte and each truncation either
decodes (a wrong but well-formed answer is allowed: the formats carry no checksums) or raises a typed
IndexFormatError that names the file — never IndexError, struct.error, ValueError, MemoryError or a hang.

Files up to 1 KiB are fuzzed exhaustively (every byte, every length); larger ones at every byte of their
first 128 bytes (the heads, where lengths and counts live) and at 64 seeded positions and lengths beyond.
(Each format's own tests fuzz its small files exhaustively too.) A full `describe()` of a file over
64 KiB lists every entry, so those files run it on every eighth case only.

Python-level allocations are traced (tracemalloc) to catch a corrupt length that allocates without touching the
memory, which peak RSS would miss. Tracing makes a case several times slower (it was 18 of this file's 23 CPU-s),
so files up to 2 KiB trace every case and files up to 64 KiB every TRACE_EVERY-th, each file from its own offset;
the nightly hunt (BGIX_FUZZ_RANDOM=1) traces every case.
"""
from __future__ import annotations

import os
import random
import resource
import tracemalloc

import pytest

from index_format.errors import IndexFormatError
from index_format.file_index.formats import open_payload
from index_format.file_index.schema import key_type_of, parse_schema
from index_format.file_index.values import paimon_type
from tests.file_index_vectors import VectorEntry, load_rows, load_vectors

pytestmark = pytest.mark.slow  # every byte of every reference file: out of the quick loop
VECTORS = load_vectors()
EXHAUSTIVE = 1024
HEAD = 128
SAMPLED = 64
TRACED_ALWAYS = 2048
TRACED_SOME = 65536
TRACE_EVERY = 1 if os.environ.get("BGIX_FUZZ_RANDOM") == "1" else 4


def _positions(size: int, seed: int) -> list[int]:
    if size <= EXHAUSTIVE:
        return list(range(size))
    rng = random.Random(seed)
    return list(range(HEAD)) + sorted(rng.sample(range(HEAD, size), SAMPLED))


def _probe(v: VectorEntry, data: bytes, literal: object, *, describe: bool = True) -> None:
    """Open the file and ask what a user would: describe, a point look-up, NULLs, a range."""
    name = str(v.file)
    if v.index_type == "container":
        from index_format.file_index.container import read_container
        schema = parse_schema(v.data_type)
        c = read_container(data, path=name)
        if describe:
            c.describe()
        for col in dict.fromkeys(e[0] for e in c.entries):
            kt = key_type_of(schema, col)
            if kt is None:
                continue
            for r in c.readers(col, kt):
                if describe:
                    r.describe()
                r.is_null()
                r.eq(None if kt.name != "string" else "x")
        return
    r = open_payload(v.index_type, data, paimon_type(v.data_type), path=name)
    if describe:
        r.describe()
    r.eq(literal)
    r.is_null()
    r.not_in([literal])
    if literal is not None:
        r.lt(literal)
        r.ge(literal)


def _first_value(v: VectorEntry) -> object:
    if v.index_type == "container":
        return None
    return next((x for x in load_rows(v.input, v.data_type) if x is not None), None)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v.id)
def test_every_flip_and_truncation_is_typed(v: VectorEntry) -> None:
    data = v.file.read_bytes()
    literal = _first_value(v)
    _probe(v, data, literal)  # the intact file decodes
    failures: list[str] = []
    # Every file is also held to a bound on the process's peak RSS (below).
    every = 1 if len(data) <= TRACED_ALWAYS else TRACE_EVERY if len(data) <= TRACED_SOME else 0
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    for i, pos in enumerate(_positions(len(data), seed=len(data))):
        for case, blob in (("flip", data[:pos] + bytes([data[pos] ^ (0xFF if i % 2 else 0x01)]) + data[pos + 1:]),
                           ("cut", data[:pos])):
            # tracing costs only while it runs: on for the traced cases alone
            trace = every and (i + len(data)) % every == 0
            if trace:
                tracemalloc.start()
            try:
                _probe(v, blob, literal, describe=len(data) <= 65536 or i % 8 == 0)
            except IndexFormatError as exc:
                if exc.path != str(v.file) or not str(exc):
                    failures.append(f"{case}@{pos}: error does not name the file: {exc!r}")
            except Exception as exc:  # noqa: BLE001 - the point is to catch every other kind
                failures.append(f"{case}@{pos}: {type(exc).__name__}: {exc}")
            finally:
                peak = tracemalloc.get_traced_memory()[1] if trace else 0
                if trace:
                    tracemalloc.stop()
            if peak > 64 * len(data) + (64 << 20):
                failures.append(f"{case}@{pos}: {peak} bytes of memory for a {len(data)}-byte file")
            if len(failures) > 20:
                break
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss0
    assert grown < 256 << 20, f"peak RSS grew by {grown} bytes"
    assert not failures, "\n".join(failures[:20])
