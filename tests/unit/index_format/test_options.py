"""Option table (spec §7.1): defaults, spellings, fallback keys, validation messages, round trip."""
from __future__ import annotations

import pytest

from index_format.errors import InvalidOptionError
from index_format.options import OPTION_TABLE, IndexOptions, parse_options, parse_size


def test_defaults_are_the_java_defaults() -> None:
    # spec §7.1 table, written out independently of OPTION_TABLE
    o = parse_options(None)
    assert o == IndexOptions()
    assert (o.records_per_range, o.max_parallelism, o.dictionary_block_size, o.compression,
            o.compression_level, o.fallback_scan_max_size, o.rebuild) == (
        10_000_000, 4096, 16384, "none", 1, 268_435_456, False)
    assert o.records_per_file == 12_000_000
    assert parse_options("") == o and parse_options({}) == o


@pytest.mark.parametrize(("text", "expected"), [
    ("16384", 16384), (16384, 16384), ("16 kb", 16384), ("16kb", 16384), ("16 KB", 16384),
    ("256 mb", 268_435_456), ("0 b", 0), ("0", 0), ("1 gb", 1 << 30), ("2k", 2048),
    ("3 bytes", 3), ("1 tb", 1 << 40), (" 7 m ", 7 << 20),
])
def test_parse_size(text: str | int, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "1.5 kb", "-1", "16 xb", "kb", "1 2", -5, True])
def test_parse_size_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)  # type: ignore[arg-type]


def test_paimon_string_form() -> None:
    o = parse_options("bitmap-index.compression=ZSTD, bitmap-index.compression-level=9,"
                      "bitmap-index.dictionary-block-size=1 kb,bitmap-index.fallback-scan-max-size=0 b,"
                      "sorted-index.records-per-range=1000,rebuild=true")
    assert (o.compression, o.compression_level, o.dictionary_block_size,
            o.fallback_scan_max_size, o.records_per_range, o.rebuild) == ("zstd", 9, 1024, 0, 1000, True)
    assert o.records_per_file == 1200


def test_fallback_keys_and_precedence() -> None:
    o = parse_options({"btree-index.records-per-range": "5", "btree-index.build.max-parallelism": 3})
    assert (o.records_per_range, o.max_parallelism) == (5, 3)
    o = parse_options({"btree-index.records-per-range": 5, "sorted-index.records-per-range": 7})
    assert o.records_per_range == 7  # the primary key wins over its fallback
    o = parse_options({"sorted-index.records-per-range": 7, "btree-index.records-per-range": 5})
    assert o.records_per_range == 7


def test_records_per_file_uses_java_double_arithmetic() -> None:
    # Java: (long) (recordsPerRange * 1.2) in double — floor(1.2 × R) (spec §7.1)
    assert parse_options({"sorted-index.records-per-range": 5}).records_per_file == 6
    assert parse_options({"sorted-index.records-per-range": 1}).records_per_file == 1
    assert parse_options({"sorted-index.records-per-range": 3}).records_per_file == 3


@pytest.mark.parametrize("key", ["foo", "sorted-index.records-per-file", "global-index.thread-num",
                                 "bitmap-index.compresion"])
def test_unknown_keys_name_the_key_and_list_known(key: str) -> None:
    with pytest.raises(InvalidOptionError) as info:
        parse_options({key: "1"})
    msg = str(info.value)
    assert repr(key) in msg
    for spec in OPTION_TABLE:
        assert spec.key in msg


@pytest.mark.parametrize(("key", "value"), [
    ("bitmap-index.compression", "snappy"), ("bitmap-index.compression", ""),
    ("bitmap-index.compression-level", "0"), ("bitmap-index.compression-level", "23"),
    ("bitmap-index.compression-level", "fast"), ("bitmap-index.dictionary-block-size", "0 b"),
    ("bitmap-index.dictionary-block-size", "-16"), ("bitmap-index.fallback-scan-max-size", "lots"),
    ("sorted-index.records-per-range", "0"), ("sorted-index.records-per-range", "1e6"),
    ("sorted-index.records-per-range", "99999999999"), ("sorted-index.build.max-parallelism", "-1"),
    ("rebuild", "yes"), ("sorted-index.records-per-range", True),
])
def test_bad_values_name_key_and_value(key: str, value: object) -> None:
    with pytest.raises(InvalidOptionError) as info:
        parse_options({key: value})
    assert repr(key) in str(info.value) and repr(value) in str(info.value)


def test_malformed_string_form() -> None:
    with pytest.raises(InvalidOptionError, match="key=value"):
        parse_options("bitmap-index.compression")
    with pytest.raises(InvalidOptionError, match="key=value"):
        parse_options("=zstd")


def test_lzo_is_readable_but_not_writable() -> None:
    o = parse_options({"bitmap-index.compression": "LZO"})
    assert o.compression == "lzo"
    with pytest.raises(InvalidOptionError, match="lzo"):
        o.writable_compression()
    for codec in ("none", "zstd", "lz4"):
        assert parse_options({"bitmap-index.compression": codec}).writable_compression() == codec


def test_direct_construction_is_validated() -> None:
    with pytest.raises(InvalidOptionError, match="compression-level"):
        IndexOptions(compression_level=99)
    assert IndexOptions(compression="ZSTD").compression == "zstd"  # type: ignore[arg-type]


def test_to_dict_round_trips_with_paimon_keys() -> None:
    o = parse_options({"bitmap-index.compression": "lz4", "bitmap-index.dictionary-block-size": "48",
                       "bitmap-index.fallback-scan-max-size": "0 b", "rebuild": True})
    d = o.to_dict()
    assert d["bitmap-index.compression"] == "lz4"
    assert d["bitmap-index.dictionary-block-size"] == "48 b"
    assert d["bitmap-index.fallback-scan-max-size"] == "0 b"
    assert IndexOptions().to_dict()["bitmap-index.dictionary-block-size"] == "16 kb"
    assert IndexOptions().to_dict()["bitmap-index.fallback-scan-max-size"] == "256 mb"
    assert all(isinstance(v, str) for v in d.values())
    assert parse_options(d) == o
    assert parse_options(",".join(f"{k}={v}" for k, v in d.items())) == o


def test_with_overrides() -> None:
    base = parse_options({"bitmap-index.compression": "zstd"})
    o = base.with_overrides("bitmap-index.compression-level=3")
    assert (o.compression, o.compression_level) == ("zstd", 3)


def test_table_is_complete_and_documented() -> None:
    keys = [s.key for s in OPTION_TABLE]
    assert len(keys) == len(set(keys))
    assert all(s.help and s.kind in {"int", "size", "codec", "bool", "choice"} for s in OPTION_TABLE)
    assert {s.key: s.default_text for s in OPTION_TABLE} == IndexOptions().to_dict()


def test_multivalue_options_are_their_own() -> None:
    # spec §8 (Java's MultiValueGlobalIndexOptions): same defaults as the bitmap ones, separate keys
    o = parse_options(None)
    assert (o.multivalue_dictionary_block_size, o.multivalue_compression, o.multivalue_compression_level) == (
        16384, "none", 1)
    o = parse_options("multivalue-index.dictionary-block-size=1 kb,multivalue-index.compression=ZSTD,"
                      "multivalue-index.compression-level=7")
    assert (o.multivalue_dictionary_block_size, o.multivalue_compression, o.multivalue_compression_level) == (
        1024, "zstd", 7)
    assert (o.dictionary_block_size, o.compression, o.compression_level) == (16384, "none", 1)
    with pytest.raises(InvalidOptionError, match="multivalue-index.compression-level"):
        parse_options({"multivalue-index.compression-level": 23})
    lzo = parse_options({"multivalue-index.compression": "lzo"})
    assert lzo.writable_compression() == "none"
    with pytest.raises(InvalidOptionError, match="multivalue-index.compression"):
        lzo.writable_compression(multivalue=True)
    # a level shapes files only under zstd, for each family's codec
    assert parse_options({"multivalue-index.compression-level": 5}).differences(IndexOptions()) == []
    zstd = parse_options({"multivalue-index.compression": "zstd"})
    assert zstd.differences(zstd.with_overrides({"multivalue-index.compression-level": 5})) == [
        ("multivalue-index.compression-level", "1", "5")]


def test_fm_options_have_paimons_defaults_and_reach_the_writer() -> None:
    from index_format.fm.fm_writer import FMOptions, fm_options
    o = parse_options(None)
    assert (o.fm_partition_size, o.fm_partition_row_count, o.fm_sa_sample_rate, o.fm_compression,
            o.fm_compression_level) == (16 << 20, 100_000, 32, "lz4", 1)
    assert fm_options(o) == FMOptions()
    given = {"fm-index.partition-size": "1 mb", "fm-index.partition-row-count": "40", "fm-index.sa-sample-rate": 8,
             "fm-index.compression": "ZSTD", "fm-index.compression-level": "3"}
    assert fm_options(parse_options(given)) == FMOptions(1 << 20, 40, 8, "zstd", 3) == fm_options(given)
    assert parse_options(parse_options(given).to_dict()) == parse_options(given)
    # a level differs only under zstd
    assert IndexOptions(fm_compression_level=5).differences(IndexOptions()) == []
    assert [d[0] for d in IndexOptions(fm_compression="zstd", fm_compression_level=5).differences(
        IndexOptions(fm_compression="zstd"))] == ["fm-index.compression-level"]


@pytest.mark.parametrize(("key", "value"), [
    ("fm-index.partition-size", "1 b"), ("fm-index.partition-size", "2 gb"), ("fm-index.partition-size", "x"),
    ("fm-index.partition-row-count", "0"), ("fm-index.partition-row-count", "3000000000"),
    ("fm-index.sa-sample-rate", "12"), ("fm-index.sa-sample-rate", "0"), ("fm-index.sa-sample-rate", "2048"),
    ("fm-index.compression", "lzo"), ("fm-index.compression", "snappy"), ("fm-index.compression-level", "0"),
    ("fm-index.read-cache-size", "1 mb"), ("fm-index.nope", "1"),
])
def test_bad_fm_options_name_the_option(key: str, value: str) -> None:
    with pytest.raises(InvalidOptionError, match=key.replace(".", r"\.")) as err:
        parse_options({key: value})
    assert getattr(err.value, "option", None) == key
