"""Bounds of every numeric option, option/partition input types, and the rebuild semantics of
jobspec.resolve_options (issue 10)."""
from __future__ import annotations

from typing import Any

import pytest

from index_format.errors import InvalidOptionError
from index_format.options import OPTION_TABLE, IndexOptions, parse_options, shown
from service.jobs.jobspec import JobSpec, resolve_options
from service.jobs.partitions import MAX_PARTITION_SPECS, check_matches, parse_partitions
from service.tables import check_spec

BOUNDED = [s for s in OPTION_TABLE if s.kind in ("int", "size")]
BASE = {"job_id": "j1", "warehouse": "/wh", "table": "t", "index_column": "c"}


def test_every_numeric_option_has_both_bounds() -> None:
    assert {s.key for s in BOUNDED} == {
        "sorted-index.records-per-range", "sorted-index.build.max-parallelism",
        "bitmap-index.dictionary-block-size", "bitmap-index.compression-level",
        "bitmap-index.fallback-scan-max-size", "bgix.range-sidecar.chunk-size",
        "multivalue-index.dictionary-block-size", "multivalue-index.compression-level",
        "btree-index.block-size", "btree-index.compression-level",
        "fm-index.partition-size", "fm-index.partition-row-count", "fm-index.sa-sample-rate",
        "fm-index.compression-level"}
    for s in BOUNDED:
        assert s.minimum is not None and s.maximum is not None, s.key
        assert s.minimum <= s.default <= s.maximum  # type: ignore[operator]
        assert s.maximum <= 1 << 31, s.key  # nothing beyond Java int territory


@pytest.mark.parametrize("spec", BOUNDED, ids=lambda s: s.key)
def test_bounds_are_inclusive_and_named_in_the_error(spec: Any) -> None:
    for ok in (spec.minimum, spec.maximum):
        assert getattr(parse_options({spec.key: ok}), spec.field) == ok
    for bad in (spec.minimum - 1, spec.maximum + 1):
        with pytest.raises(InvalidOptionError) as info:
            parse_options({spec.key: bad})
        msg = str(info.value)
        assert spec.key in msg and repr(bad) in msg and f"allowed {spec.range_text}" in msg
        assert info.value.option == spec.key  # type: ignore[attr-defined]


def test_direct_construction_is_bounded_too() -> None:
    with pytest.raises(InvalidOptionError, match="64 mb"):
        IndexOptions(dictionary_block_size=64 * 1024 * 1024 + 1)


@pytest.mark.parametrize("raw", [["a"], 5, 1.5, True])
def test_options_of_another_type_are_invalid_option_not_a_crash(raw: object) -> None:
    with pytest.raises(InvalidOptionError, match="options must be"):
        parse_options(raw)  # type: ignore[arg-type]


def test_huge_inputs_are_not_echoed_whole() -> None:
    with pytest.raises(InvalidOptionError) as info:
        parse_options({"bitmap-index.dictionary-block-size": "1" * 100_000 + " kb"})
    assert len(str(info.value)) < 500
    assert shown("x" * 1000).endswith("(1002 characters)")


@pytest.mark.parametrize("text", ["dt=", "dt=1;", ";", " ; ", "dt=1,dt=2", "=1", "dt", "dt=1,", [{}],
                                  [{"dt": ""}], [{"dt": None}], ["dt=1"], 5])
def test_malformed_or_empty_partition_selections(text: object) -> None:
    with pytest.raises(InvalidOptionError) as info:
        parse_partitions(text)  # type: ignore[arg-type]
    assert info.value.option == "partitions"  # type: ignore[attr-defined]


def test_partition_selection_forms_that_mean_every_partition_or_some() -> None:
    assert parse_partitions(None) == parse_partitions("") == parse_partitions("  ") == parse_partitions([]) == []
    assert parse_partitions(" dt = 1 , hh=0 ;dt=2") == [{"dt": "1", "hh": "0"}, {"dt": "2"}]
    assert parse_partitions([{"dt": 1}]) == [{"dt": "1"}]
    with pytest.raises(InvalidOptionError, match=str(MAX_PARTITION_SPECS)):
        parse_partitions(";".join(f"dt={i}" for i in range(MAX_PARTITION_SPECS + 1)))


def test_check_matches_names_only_the_specs_that_match_nothing() -> None:
    files = [{"dt": "1", "hh": "0"}, {"dt": "2", "hh": "0"}]
    check_matches([{"dt": "1"}, {"dt": "2", "hh": "0"}], files, "t")
    with pytest.raises(InvalidOptionError) as info:
        check_matches([{"dt": "1"}, {"dt": "3"}, {"dt": "2", "hh": "9"}], files, "t")
    assert "'dt=3;dt=2,hh=9'" in str(info.value) and "dt=1;" not in str(info.value)


def test_jobspec_refuses_bad_input_types_but_takes_paimon_rebuild() -> None:
    for bad in ({"options": ["x"]}, {"partitions": 7}, {"index_column": "  "},
                {"index_column": ",".join(f"c{i}" for i in range(65)), "table_format": "paimon"}):
        with pytest.raises(InvalidOptionError):
            JobSpec.from_dict({**BASE, **bad})
    # a rule of the table kind (service.tables.check_spec): a Paimon rebuild replaces all of the index's files
    spec = JobSpec.from_dict({**BASE, "options": {"rebuild": "true"}, "table_format": "paimon"})
    assert check_spec(spec).options.rebuild


INDEX = IndexOptions(dictionary_block_size=256, compression="zstd", compression_level=3).to_dict()


def test_resolve_options_inherits_the_index_options() -> None:
    o = resolve_options(None, INDEX, "c")
    assert (o.dictionary_block_size, o.compression, o.compression_level, o.rebuild) == (256, "zstd", 3, False)
    # the same values given again, or a query-time / build-time option, are fine
    o = resolve_options({"bitmap-index.compression": "ZSTD", "bitmap-index.fallback-scan-max-size": "1 mb",
                         "sorted-index.build.max-parallelism": "8"}, INDEX, "c")
    assert (o.compression, o.fallback_scan_max_size, o.max_parallelism) == ("zstd", 1 << 20, 8)
    # without an index the request (and the defaults) apply
    assert resolve_options(None, None, "c") == IndexOptions()


@pytest.mark.parametrize(("given", "key"), [
    ({"bitmap-index.dictionary-block-size": "512 b"}, "bitmap-index.dictionary-block-size"),
    ({"bitmap-index.compression": "none"}, "bitmap-index.compression"),
    ({"bitmap-index.compression-level": "9"}, "bitmap-index.compression-level"),
    ({"bgix.key-order": "bytes"}, "bgix.key-order"),
    ({"sorted-index.records-per-range": "100"}, "sorted-index.records-per-range"),
])
def test_resolve_options_refuses_file_shaping_changes_without_rebuild(given: dict[str, str], key: str) -> None:
    with pytest.raises(InvalidOptionError) as info:
        resolve_options(given, INDEX, "c")
    assert key in str(info.value) and "rebuild=true" in str(info.value)
    assert info.value.option == key  # type: ignore[attr-defined]
    o = resolve_options({**given, "rebuild": "true"}, INDEX, "c")
    assert o.rebuild and o.to_dict()[key] == parse_options(given).to_dict()[key]


def test_level_counts_only_under_zstd() -> None:
    plain = IndexOptions().to_dict()
    assert resolve_options({"bitmap-index.compression-level": "9"}, plain, "c").compression_level == 9


def test_an_index_built_with_options_now_out_of_range_needs_rebuild() -> None:
    with pytest.raises(InvalidOptionError, match="rebuild=true"):
        resolve_options(None, {**INDEX, "bitmap-index.dictionary-block-size": "1 tb"}, "c")
    assert resolve_options({"rebuild": "true"}, {**INDEX, "bitmap-index.dictionary-block-size": "1 tb"},
                           "c").dictionary_block_size == 16384


def test_a_plan_with_too_many_ranges_is_refused_before_writing(tmp_path: Any, monkeypatch: Any) -> None:
    from index_format.storage import Storage
    from service.tables.files import plan as plan_module
    from service.catalog.catalog import Catalog
    from service.catalog.model import Table
    from tests.factories import make_parquet_table

    gen = make_parquet_table(tmp_path / "data", rows_per_file=(60,))
    catalog = Catalog(Storage(str(tmp_path / "wh"), [str(tmp_path / "data")]))
    table = catalog.put_table(Table("t", str(gen.location)))
    monkeypatch.setattr(plan_module, "MAX_RANGES", 5)
    assert len(plan_module.make_plan(catalog, table, "s", IndexOptions(records_per_range=12), []).ranges) == 5
    with pytest.raises(InvalidOptionError, match="6 row ranges") as info:
        plan_module.make_plan(catalog, table, "s", IndexOptions(records_per_range=10), [])
    assert info.value.option == "sorted-index.records-per-range"  # type: ignore[attr-defined]
