"""bgix's GlobalIndexResultSerializer bytes against Paimon Java's (tests/data/global_index_result, written by
Paimon's own serializer): every unscored set encodes to Java's bytes exactly, every Java file (scored or not)
decodes to its set and scores, and malformed bytes are refused by name."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from pyroaring import BitMap64

from index_format import bitmaps
from index_format.errors import CorruptFileError, UnsupportedVersionError
from index_format.global_index_result import decode, encode
from tests.data import GLOBAL_INDEX_RESULT
from tests.data.global_index_result.id_sets import id_set, names, scores

NAMES = names()
UNSCORED = [n for n in NAMES if scores(n) is None]


def _java(name: str) -> bytes:
    return (GLOBAL_INDEX_RESULT / f"{name}.java.bin").read_bytes()


def test_the_vectors_cover_what_they_claim() -> None:
    assert {"empty", "small", "above_2_32", "many_containers", "many_buckets", "tie_array", "tie_run"} <= set(UNSCORED)
    assert {"scored_empty", "scored_small", "scored_specials"} <= set(NAMES) - set(UNSCORED)
    assert id_set("above_2_32").max() == 2**63 - 2
    assert len({i >> 32 for i in id_set("many_buckets")}) == 3
    assert len({i >> 16 for i in id_set("many_containers")}) >= 10


@pytest.mark.parametrize("name", UNSCORED)
def test_encode_is_javas_bytes(name: str) -> None:
    ids = id_set(name)
    before = ids.serialize()
    assert encode(ids) == _java(name)
    assert ids.serialize() == before   # run optimization works on a copy


# sets with a range of 3 to 2·runs + 1 ids in one container: added as a range it is a run container from the start,
# and Java's runOptimize (like CRoaring's) keeps runs on a size tie, while the same ids added one by one stay an array
RANGE_TIES = {"tie_run", "above_2_32"}


@pytest.mark.parametrize("name", UNSCORED)
def test_equal_sets_built_one_id_at_a_time_encode_alike_but_for_ties(name: str) -> None:
    """Java's bytes of a set depend on how it was built where a container ties; every form decodes alike."""
    ids = id_set(name)
    rebuilt = BitMap64(np.fromiter(ids, dtype=np.uint64, count=len(ids)).tolist())
    assert decode(encode(rebuilt)).row_ids == ids
    assert (encode(rebuilt) == _java(name)) == (name not in RANGE_TIES)
    if name == "tie_run":
        assert encode(rebuilt) == _java("tie_array")


@pytest.mark.parametrize("name", NAMES)
def test_decode_reads_javas_bytes(name: str) -> None:
    got = decode(_java(name))
    assert got.row_ids == id_set(name)
    want = scores(name)
    if want is None:
        assert got.scores is None
    else:
        assert got.scores is not None and got.scores.dtype == np.float32
        # bit for bit: -0.0, NaN and the smallest subnormal included
        assert got.scores.view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_the_wire_layout() -> None:
    """int version 2 · byte kind · int length · portable Roaring64 (little-endian inside) · int score count."""
    data = _java("small")
    body = bitmaps.serialize(BitMap64([1, 5, 10, 100, 1000]))
    assert data == struct.pack(">ibi", 2, 0, len(body)) + body + struct.pack(">i", 0)
    assert _java("empty") == bytes.fromhex("00000002" "00" "00000008") + bytes(8) + bytes(4)
    scored = _java("scored_small")
    assert scored[4] == 1 and scored[-20:] == struct.pack(">i4f", 4, 0.9, 0.8, 0.7, 0.6)


def test_version_1_is_read_as_java_reads_it() -> None:
    """Version 1 (no kind byte; a result with scores is scored), as Paimon's reader still takes it."""
    body = bitmaps.serialize(BitMap64([1, 5, 10]))
    v1 = struct.pack(">ii", 1, len(body)) + body
    plain = decode(v1 + struct.pack(">i", 0))
    assert list(plain.row_ids) == [1, 5, 10] and plain.scores is None
    scored = decode(v1 + struct.pack(">i3f", 3, 0.5, 0.25, 1.0))
    assert scored.scores is not None and scored.scores.tolist() == [0.5, 0.25, 1.0]


@pytest.mark.parametrize(("data", "error", "words"), [
    (b"", CorruptFileError, "shorter than the 4-byte version"),
    (b"\x00\x00\x00\x03" + bytes(17), UnsupportedVersionError, "version 3"),
    (b"\x00\x00\x00\x02\x00\x00", CorruptFileError, "shorter than the 9-byte head"),
    (b"\x00\x00\x00\x02\x02" + bytes(16), CorruptFileError, "result kind 2"),
    (b"\x00\x00\x00\x02\x00\x00\x00\x00\x09" + bytes(12), CorruptFileError, "does not fit"),
    (b"\x00\x00\x00\x02\x00\xff\xff\xff\xff" + bytes(12), CorruptFileError, "does not fit"),
    (b"\x00\x00\x00\x02\x00\x00\x00\x00\x08" + b"\x09" + bytes(11), CorruptFileError, "roaring"),
    (b"\x00\x00\x00\x02\x00\x00\x00\x00\x08" + bytes(8) + b"\x00\x00\x00\x01\x00\x00\x00\x00", CorruptFileError,
     "an unscored result has 1 scores"),
    (b"\x00\x00\x00\x02\x01\x00\x00\x00\x08" + bytes(8) + b"\x00\x00\x00\x01", CorruptFileError,
     "1 scores for 0 row ids"),
])
def test_malformed_bytes_are_refused_by_name(data: bytes, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        decode(data)


@pytest.mark.parametrize("name", ["small", "scored_small"])
def test_truncated_or_trailing_bytes_are_refused(name: str) -> None:
    data = _java(name)
    with pytest.raises(CorruptFileError):
        decode(data[:-1])
    with pytest.raises(CorruptFileError, match="1 bytes after the result"):
        decode(data + b"\x00")


def test_scores_that_do_not_fit_are_refused() -> None:
    data = _java("scored_small")
    with pytest.raises(CorruptFileError, match="do not fit"):
        decode(data[:-4])
