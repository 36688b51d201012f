"""Manifest metadata (spec §4): examples, flags and the legacy reading rules."""
from __future__ import annotations

import pytest

from index_format.errors import CorruptFileError
from index_format.global_index.filemeta import build_meta, parse_meta
from index_format.types import parse_type

S = parse_type("string")


def test_golden_metadata() -> None:
    m = parse_meta(S, bytes.fromhex("040000006576656e030000006f6464000100"))
    assert (m.first_key, m.last_key, m.has_nulls, m.only_nulls) == ("even", "odd", False, False)


def test_all_null_metadata_with_flags() -> None:
    m = parse_meta(S, bytes.fromhex("0000000000000000010103"))
    assert (m.first_key, m.last_key, m.has_nulls, m.only_nulls) == (None, None, True, True)


def test_empty_string_is_a_real_key() -> None:
    m = parse_meta(S, bytes.fromhex("0000000004000000f09f9880010100"))
    assert (m.first_key, m.last_key, m.only_nulls) == ("", "😀", False)


def test_legacy_rules() -> None:
    # no version/flags bytes: both lengths 0 and has-nulls → all-null file
    assert parse_meta(S, bytes.fromhex("000000000000000001")).only_nulls
    # only one zero length: that empty key is real
    m = parse_meta(S, bytes.fromhex("00000000010000006101"))
    assert (m.first_key, m.last_key, m.only_nulls) == ("", "a", False)
    # both empty without nulls: two empty-string keys
    m = parse_meta(S, bytes.fromhex("000000000000000000"))
    assert (m.first_key, m.last_key) == ("", "")


def test_int_metadata_round_trip() -> None:
    kt = parse_type("int")
    data = build_meta(kt, -1, 256, True)
    assert data.hex() == "04000000ffffffff0400000000010000010100"  # spec §12.2
    m = parse_meta(kt, data)
    assert (m.first_key, m.last_key, m.has_nulls) == (-1, 256, True)


@pytest.mark.parametrize("hexbytes", ["", "0400", "05000000616263", "00000000ffffffff00", "0000000000000000"])
def test_malformed_metadata(hexbytes: str) -> None:
    with pytest.raises(CorruptFileError):
        parse_meta(S, bytes.fromhex(hexbytes))


def test_deix_marker_is_16_big_endian_bytes_and_only_it_names_a_snapshot() -> None:
    from index_format.global_index.filemeta import deix_scan_snapshot, deix_source_meta

    # Paimon Java's marker: int 0x44454958 ("DEIX"), int version 1, long scanned snapshot id, big-endian.
    assert deix_source_meta(7) == b"DEIX" + (1).to_bytes(4, "big") + (7).to_bytes(8, "big")
    assert deix_scan_snapshot(b"DEIX" + (1).to_bytes(4, "big") + (2**40).to_bytes(8, "big")) == 2**40
    assert deix_scan_snapshot(None) is None
    assert deix_scan_snapshot(b"DEIX\x00\x00\x00\x01") is None          # too short
    assert deix_scan_snapshot(b"XIED" + bytes(12)) is None              # another magic
