"""Options that belong to one index family (issue 33): a build of other families refuses them by name
(options.check_families, for every table kind and `bgix build`), an index records only its own family's, and a build
of several columns merges each family's options from its own columns (jobspec.one_set_of_options)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from index_format.errors import InvalidOptionError
from index_format.options import OPTION_TABLE, IndexOptions, check_families, parse_options
from service.jobs.jobspec import one_set_of_options, resolve_options


def test_every_family_option_is_named_for_its_family() -> None:
    # the keys whose prefix names a family belong to it, the scan budget (any family's scans) excepted
    prefixed = {s.key: s.key.split("-index.")[0] for s in OPTION_TABLE if "-index." in s.key
                and not s.key.startswith("sorted-") and s.key != "bitmap-index.fallback-scan-max-size"}
    assert {s.key: s.family for s in OPTION_TABLE if s.family is not None} == prefixed


@pytest.mark.parametrize(("raw", "families", "key"), [
    ({"bitmap-index.compression": "zstd"}, ["btree"], "bitmap-index.compression"),
    ("sorted-index.records-per-range=5,bitmap-index.compression=none", ["btree"], "bitmap-index.compression"),
    ({"multivalue-index.compression": "zstd"}, ["bitmap", "btree"], "multivalue-index.compression"),
    ("fm-index.sa-sample-rate=4", ["multivalue"], "fm-index.sa-sample-rate"),
])
def test_an_option_of_another_family_is_refused_whatever_its_value(raw: Any, families: list[str], key: str) -> None:
    with pytest.raises(InvalidOptionError) as info:
        check_families(raw, families)
    assert info.value.option == key  # type: ignore[attr-defined]
    owner = key.split("-index.")[0]
    assert f"belongs to the {owner} index family" in str(info.value)


@pytest.mark.parametrize(("raw", "families"), [
    (None, ["btree"]),
    ({"sorted-index.records-per-range": "5", "bitmap-index.fallback-scan-max-size": "0 b", "rebuild": "true",
      "bgix.key-order": "bytes"}, ["btree"]),
    ("btree-index.compression=zstd;multivalue-index.compression=lz4", ["btree", "multivalue"]),
    (IndexOptions(compression="zstd"), ["btree"]),   # a parsed set holds every key: nothing to tell from it
])
def test_options_of_the_builds_families_and_of_every_family_pass(raw: Any, families: list[str]) -> None:
    check_families(raw, families)


def test_an_index_records_only_its_own_familys_options() -> None:
    both = parse_options({"btree-index.compression": "zstd", "bitmap-index.compression": "lz4",
                          "sorted-index.records-per-range": "9"})
    btree = both.of_family("btree")
    assert (btree.btree_compression, btree.compression, btree.records_per_range) == ("zstd", "none", 9)
    assert btree.of_family("btree") == btree


def test_a_build_of_several_columns_takes_each_familys_options_from_its_columns() -> None:
    uid = resolve_options(None, parse_options({"btree-index.compression": "zstd"}).to_dict(), "uid", "btree")
    tags = resolve_options(None, parse_options({"multivalue-index.compression": "lz4",
                                                "btree-index.compression": "lz4"}).to_dict(), "tags", "multivalue")
    merged = one_set_of_options({"uid": ("btree", uid), "tags": ("multivalue", tags)})
    assert (merged.btree_compression, merged.multivalue_compression) == ("zstd", "lz4")
    # an option of every family on which the indexes differ cannot be one value
    other = resolve_options(None, parse_options({"sorted-index.records-per-range": "7"}).to_dict(), "tags",
                            "multivalue")
    with pytest.raises(InvalidOptionError, match="'uid' and 'tags' would be built with other values") as info:
        one_set_of_options({"uid": ("btree", uid), "tags": ("multivalue", other)})
    assert info.value.option == "sorted-index.records-per-range"  # type: ignore[attr-defined]


def test_an_incremental_build_compares_only_its_familys_options() -> None:
    """A request for "uid,tags" with multivalue options must not trip over the btree index of uid."""
    recorded = IndexOptions().to_dict()
    got = resolve_options({"multivalue-index.compression": "zstd"}, recorded, "uid", "btree")
    assert got.btree_compression == "none"
    with pytest.raises(InvalidOptionError, match="rebuild=true"):
        resolve_options({"btree-index.compression": "zstd"}, recorded, "uid", "btree")


def test_bgix_build_refuses_an_option_of_another_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from service.cli import main as bgix_main
    from tests.factories import make_parquet_table

    gen = make_parquet_table(tmp_path, rows_per_file=(50,))
    code = bgix_main(["build", "--warehouse", str(tmp_path / "wh"), "--table", "t", "--location", str(gen.location),
                      "--column", "n", "--index-type", "btree", "--engine", "local",
                      "--options", "bitmap-index.compression=zstd"])
    assert code == 1 and "'bitmap-index.compression' belongs to the bitmap index family" in capsys.readouterr().err
    assert not (tmp_path / "wh" / "tables" / "t" / "indexes").exists()
    assert not (tmp_path / "wh" / "tables" / "t").exists()   # refused before the table is registered
