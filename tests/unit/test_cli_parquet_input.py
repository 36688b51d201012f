"""service.cli.parquet_input reads what pyarrow.parquet.ParquetFile reads (the ground truth): flat, nested and
dictionary-read columns, in the order asked, and the same errors; also when pyarrow's reader class is gone."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow._parquet
import pyarrow.parquet as pq
import pytest

from index_format.errors import InvalidOptionError
from service.cli.parquet_input import ParquetInput


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    n = 2500
    table = pa.table({
        "s": pa.array([None if i % 9 == 0 else f"v{i % 13}" for i in range(n)]),
        "m": pa.array([[("k", str(i))] if i % 4 else [] for i in range(n)], pa.map_(pa.string(), pa.string())),
        "st": pa.array([{"a": i, "b": None if i % 3 else "x"} for i in range(n)]),
        "n": pa.array(list(range(n)), pa.int32()),
    })
    path = tmp_path / "sample.parquet"
    pq.write_table(table, path, row_group_size=700)   # several row groups, one dictionary each
    return path


@pytest.fixture(params=["reader", "fallback"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":   # as if a pyarrow release renamed its reader class
        monkeypatch.delattr(pyarrow._parquet, "ParquetReader")
    return str(request.param)


@pytest.mark.parametrize("columns", [["s"], ["n", "s"], ["m"], ["st", "n"], ["s", "m", "st", "n"]])
def test_columns_read_as_parquet_file_reads_them(sample: Path, mode: str, columns: list[str]) -> None:
    with ParquetInput(str(sample)) as source:
        assert source.schema == pq.ParquetFile(sample).schema_arrow
        got = source.read(columns)
    assert got.equals(pq.ParquetFile(sample).read(columns=columns))
    assert got.column_names == columns


def test_dictionary_columns_as_parquet_file_reads_them(sample: Path, mode: str) -> None:
    with ParquetInput(str(sample), dictionary=["s"]) as source:
        got = source.read(["s", "n"])
    expected = pq.ParquetFile(sample, read_dictionary=["s"]).read(columns=["s", "n"])
    assert got.equals(expected)
    assert pa.types.is_dictionary(got.column("s").type)
    assert got.column("s").num_chunks == expected.column("s").num_chunks


def test_errors(sample: Path, tmp_path: Path, mode: str) -> None:
    with pytest.raises(FileNotFoundError):
        ParquetInput(str(tmp_path / "missing.parquet"))
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InvalidOptionError, match="junk.parquet is not a Parquet file"):
        ParquetInput(str(tmp_path / "junk.parquet"))
    with ParquetInput(str(sample)) as source:
        with pytest.raises(InvalidOptionError, match="no column 'zz' in .*columns: s, m, st, n"):
            source.check_columns(["s", "zz"])


def test_read_in_background(sample: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with ParquetInput(str(sample), dictionary=["s"]) as source:
        wait = source.read_in_background(["s", "m"])
        assert wait().equals(pq.ParquetFile(sample, read_dictionary=["s"]).read(columns=["s", "m"]))

        def broken(columns: list[str]) -> pa.Table:
            raise pa.ArrowInvalid("bad page")

        monkeypatch.setattr(source, "read", broken)
        wait = source.read_in_background(["s"])
        with pytest.raises(pa.ArrowInvalid, match="bad page"):
            wait()
