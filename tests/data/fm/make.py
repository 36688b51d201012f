"""Regenerate the fm reference files of this folder with pypaimon-rust (see README.md). Not run by the tests.

    PYTHONPATH=. .venv/bin/python tests/data/fm/make.py

For each case a data-evolution table `t (id INT, txt STRING)` gets the case's rows in one insert and
`CALL sys.create_global_index(..., index_column => 'txt', index_type => 'fm', options => ...)`. Every fm file
pypaimon-rust wrote is copied here as `<case>.<k>.index` (k-th row range), and `<case>.json` records the options,
the column read back from the table (`SELECT "_ROW_ID", txt`) and, per file, its manifest entry (file name, size,
row count, row range, `_INDEX_META` in hex).
"""
from __future__ import annotations

import glob
import json
import random
import shutil
import tempfile
from pathlib import Path

import fastavro
import pyarrow as pa

HERE = Path(__file__).resolve().parent

_WORDS = ["", "a", "ab", "vip", "vip-u", "VIP", "é", "über", "日本語", "🙂", "x%y", "a_b", "back\\slash",
          "%", "_", "\\", "it's", "tab\tx", "\x01", "\x00z"]


def _rows(rng: random.Random, n: int) -> list[str | None]:
    out: list[str | None] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.08:
            out.append(None)
        elif r < 0.12:
            out.append("")
        elif r < 0.14:
            out.append("".join(rng.choice(_WORDS) for _ in range(rng.randint(30, 120))))   # long values
        else:
            out.append("".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4))))
    return out


def _cases() -> list[tuple[str, list[str | None], str | None]]:
    rng = random.Random(31)
    return [
        ("small", ["hello", "world", None, "", "abc%_\\x", "héllo 🙂", "hello world"], "fm-index.compression=none"),
        ("default", _rows(rng, 600), None),                                              # lz4, one partition
        ("parts", _rows(rng, 700), "fm-index.partition-row-count=64,fm-index.sa-sample-rate=4"),
        ("zstd", _rows(rng, 500), "fm-index.compression=zstd,fm-index.compression-level=3,"
                                  "fm-index.partition-size=2kb"),
        ("ranges", _rows(rng, 250), "sorted-index.records-per-range=100,fm-index.compression=none,"
                                    "fm-index.sa-sample-rate=1"),
        ("nulls", [None, None, "", None, "x", None], "fm-index.compression=none"),
    ]


def main() -> None:
    from pypaimon_rust.datafusion import PaimonCatalog, SQLContext
    for old in glob.glob(str(HERE / "*.index")) + glob.glob(str(HERE / "*.json")):
        Path(old).unlink()
    for name, rows, options in _cases():
        with tempfile.TemporaryDirectory() as tmp:
            ctx = SQLContext()
            ctx.register_catalog("p", {"warehouse": tmp})
            ctx.set_current_catalog("p")
            ctx.sql("CREATE TABLE default.t (id INT, txt STRING) WITH ('row-tracking.enabled'='true', "
                    "'data-evolution.enabled'='true')")
            table = PaimonCatalog({"warehouse": tmp}).get_table("default.t")
            builder = table.new_batch_write_builder()
            write = builder.new_write()
            write.write_arrow(pa.record_batch({"id": pa.array(range(len(rows)), pa.int32()),
                                               "txt": pa.array(rows, pa.string())}))
            commit = builder.new_commit()
            commit.commit(write.prepare_commit())
            extra = f", options => '{options}'" if options else ""
            ctx.sql(f"CALL sys.create_global_index(table => 'default.t', index_column => 'txt', "
                    f"index_type => 'fm'{extra})")
            back = pa.Table.from_batches(ctx.sql('SELECT "_ROW_ID", txt FROM default.t')).to_pylist()
            back.sort(key=lambda r: r["_ROW_ID"])
            assert [r["txt"] for r in back] == rows, name
            files = []
            for mf in sorted(glob.glob(f"{tmp}/default.db/t/manifest/index-manifest-*")):
                with open(mf, "rb") as f:
                    for e in fastavro.reader(f):
                        g = e["_GLOBAL_INDEX"]
                        files.append({"file": e["_FILE_NAME"], "index_type": e["_INDEX_TYPE"],
                                      "file_size": e["_FILE_SIZE"], "row_count": e["_ROW_COUNT"],
                                      "row_range": [g["_ROW_RANGE_START"], g["_ROW_RANGE_END"]],
                                      "index_meta": g["_INDEX_META"].hex()})
            files.sort(key=lambda f: f["row_range"][0])
            for k, f in enumerate(files):
                shutil.copy(f"{tmp}/default.db/t/index/{f['file']}", HERE / f"{name}.{k}.index")
                f["file"] = f"{name}.{k}.index"
            (HERE / f"{name}.json").write_text(json.dumps(
                {"options": options, "rows": rows, "files": files}, ensure_ascii=False, indent=1) + "\n")
            print(name, len(rows), "rows,", len(files), "files")


if __name__ == "__main__":
    main()
