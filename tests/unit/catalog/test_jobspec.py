"""The build-job spec: validated once on construction, and its JSON form parses back to the same spec."""
from __future__ import annotations

import json

import pytest

from index_format.errors import InvalidOptionError
from index_format.options import IndexOptions
from service.jobs.jobspec import JobSpec
from service.catalog.model import Table
from service.tables import check_spec
from service.tables.files.files_source import FileSource

BASE = {"job_id": "j1", "warehouse": "/wh", "table": "t", "index_column": "s"}


def test_round_trip_through_json_keeps_the_validated_values() -> None:
    spec = JobSpec.from_dict({**BASE, "index_type": " Bitmap ", "partitions": "dt=1,hh=0;dt=2,hh=1",
                              "options": "sorted-index.records-per-range=5,bitmap-index.compression=zstd",
                              "storage_options": {"key": "secret"}, "engine": "local"})
    assert spec.index_type == "bitmap" and spec.engine == "local"
    assert spec.partitions == [{"dt": "1", "hh": "0"}, {"dt": "2", "hh": "1"}]
    assert spec.options == IndexOptions(records_per_range=5, compression="zstd")
    back = JobSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert back == spec
    assert "storage_options" not in spec.public_dict() and spec.public_dict()["index_column"] == "s"


def test_nulls_take_defaults_and_unknown_keys_are_ignored() -> None:
    spec = JobSpec.from_dict({**BASE, "partitions": None, "options": None, "from_a_newer_service": 1})
    assert spec.partitions == [] and spec.options == IndexOptions() and spec.engine == "spark"


@pytest.mark.parametrize(("change", "match"), [
    ({"table": None}, "lacks"),
    ({"index_type": "bloom"}, "bitmap"),
    ({"index_type": "btree,bloom"}, "'bloom'"),
    ({"index_column": "a,b", "index_type": "btree,multivalue,bitmap"}, "3 families for 2 columns"),
    ({"index_column": "../x"}, "invalid column name"),
    ({"options": {"no-such-option": "1"}}, "no-such-option"),
    ({"options": "bitmap-index.compression=lzo"}, "lzo"),
    ({"partitions": "dt"}, "not key=value"),
    ({"engine": "flink"}, "engine"),
    ({"scan": "fast"}, "scan"),
    ({"job_id": "a/b"}, "invalid job name"),
])
def test_invalid_specs_are_refused_on_construction(change: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidOptionError, match=match):
        JobSpec.from_dict({**BASE, **change})


def test_the_table_kind_rules_of_a_spec() -> None:
    # both kinds take several columns, with one family for all or one per column (issue 33)
    plain = check_spec(JobSpec.from_dict({**BASE, "index_column": "a, b", "index_type": "btree,multivalue"}))
    assert plain.columns == ["a", "b"] and plain.families == {"a": "btree", "b": "multivalue"}
    several = JobSpec.from_dict({**BASE, "index_column": "a, b", "table_format": "paimon"})
    assert check_spec(several).columns == ["a", "b"]
    # a Paimon rebuild replaces every index file of the column's family (tests/api/test_paimon_refresh.py)
    rebuild = JobSpec.from_dict({**BASE, "table_format": "paimon", "options": {"rebuild": "true"}})
    assert check_spec(rebuild).options.rebuild


def test_checks_against_the_table() -> None:
    parted = Table("t", "/x", partition_columns=["dt"])
    FileSource(None, parted).check_table(JobSpec.from_dict({**BASE, "partitions": "dt=1"}))
    with pytest.raises(InvalidOptionError, match="partition column"):
        FileSource(None, parted).check_table(JobSpec.from_dict({**BASE, "index_column": "dt"}))
    with pytest.raises(InvalidOptionError, match="not partition columns"):
        FileSource(None, parted).check_table(JobSpec.from_dict({**BASE, "partitions": "hh=1"}))
    with pytest.raises(InvalidOptionError, match="not partitioned"):
        FileSource(None, Table("t", "/x")).check_table(JobSpec.from_dict({**BASE, "partitions": "dt=1"}))
