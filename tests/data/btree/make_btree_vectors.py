"""Regenerate the btree reference files of this folder with pypaimon-rust (see README.md). Not run by the tests.

    PYTHONPATH=. .venv/bin/python tests/data/btree/make_btree_vectors.py

Each table column gets `CALL sys.create_global_index(..., index_type => 'btree', options => ...)`; the index
file Paimon's Rust writer wrote is copied here as <name>.index and the column's rows as <name>.tsv
(`row_id<TAB>value`, NULL for null) read back from the table, so the tests compare against the table itself.
"""
from __future__ import annotations

import datetime as dt
import glob
import math
import os
import random
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
from pypaimon_rust.datafusion import SQLContext

HERE = Path(__file__).resolve().parent
N = 1000


def _sql_literal(type_sql: str, v: object) -> str:
    if v is None:
        return "NULL"
    if type_sql == "STRING":
        return "'" + str(v).replace("'", "''") + "'"
    if type_sql in ("DOUBLE", "FLOAT"):
        f = float(v)  # type: ignore[arg-type]
        if math.isnan(f) or math.isinf(f):
            return f"CAST('{'NaN' if math.isnan(f) else ('Infinity' if f > 0 else '-Infinity')}' AS {type_sql})"
        return f"CAST({f!r} AS {type_sql})"
    if type_sql == "DATE":
        return f"DATE '{v.isoformat()}'"  # type: ignore[union-attr]
    if type_sql.startswith("TIMESTAMP"):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"  # type: ignore[union-attr]
    if type_sql.startswith("DECIMAL"):
        return f"CAST('{v}' AS {type_sql})"
    return str(v)


def _values(kind: str, rng: random.Random) -> list[object]:
    out: list[object] = []
    for i in range(N):
        if rng.random() < 0.08:
            out.append(None)
            continue
        if kind == "bigint":
            out.append(rng.choice([-(1 << 63), (1 << 63) - 1, 0, -1, 1, 1 << 40, -(1 << 40)])
                       if rng.random() < 0.1 else rng.randint(-300, 300) * 7919)
        elif kind == "postings":   # dense runs (roaring lists in version 2), scattered ids (deltas), singles
            out.append(i // 200 if i < 600 else (1000 + i % 37 if i < 850 else 5000 + i))
        elif kind == "string":
            out.append(rng.choice(["", "a", "ab", "abc", "b", "ü", "über", "日本", "日本語", "😀", "x'y",
                                   "zz\x7f", f"key-{rng.randint(0, 400):04d}", f"key-{rng.randint(0, 9)}"]))
        elif kind == "double":
            out.append(rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -1.5, 1e300, -1e-300])
                       if rng.random() < 0.2 else round(rng.uniform(-1000, 1000), 3))
        elif kind == "date":
            out.append(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-40000, 40000)))
        elif kind == "timestamp3":
            out.append(dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=rng.randint(-2 * 10**12, 2 * 10**12)))
        elif kind == "timestamp6":
            out.append(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=rng.randint(-10**15, 10**15) // 97))
        elif kind == "decimal":
            out.append(f"{rng.randint(-99999999, 99999999) / 100:.2f}")
        elif kind == "int":
            out.append(rng.randint(-50, 50))
    return out


# name, column kind, SQL type, bgix type, index options
VECTORS = [
    ("bigint.v1.none.b256", "bigint", "BIGINT", "bigint", "btree-index.block-size=256"),
    ("postings.v2.none.b256", "postings", "BIGINT", "bigint", "btree-index.block-size=256,btree-index.file-version=2"),
    ("string.v1.none.b200", "string", "STRING", "string", "btree-index.block-size=200"),
    ("string.v1.zstd.b512", "string", "STRING", "string", "btree-index.block-size=512,btree-index.compression=zstd"),
    ("string.v1.lz4.b512", "string", "STRING", "string", "btree-index.block-size=512,btree-index.compression=lz4"),
    ("double.v1.none.b300", "double", "DOUBLE", "double", "btree-index.block-size=300"),
    ("date.v1.none.b300", "date", "DATE", "date", "btree-index.block-size=300"),
    ("timestamp3.v1.none.b300", "timestamp3", "TIMESTAMP(3)", "timestamp(3)", "btree-index.block-size=300"),
    ("timestamp6.v1.none.b300", "timestamp6", "TIMESTAMP(6)", "timestamp(6)", "btree-index.block-size=300"),
    ("decimal.v1.none.b300", "decimal", "DECIMAL(10,2)", "decimal(10,2)", "btree-index.block-size=300"),
    ("int.v1.zstd.b4096", "int", "INT", "int", "btree-index.block-size=4096,btree-index.compression=zstd"),
]


def _tsv_value(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return str(v)


def main() -> None:
    rng = random.Random(20260701)
    lines = ["file\tinput\ttype\tversion\tcompression\tblock_size\toptions"]
    for name, kind, type_sql, bgix_type, options in VECTORS:
        wh = tempfile.mkdtemp()
        try:
            ctx = SQLContext()
            ctx.register_catalog("p", {"warehouse": wh})
            ctx.set_current_catalog("p")
            ctx.sql(f"CREATE TABLE t (id BIGINT, v {type_sql}) WITH "
                    "('row-tracking.enabled'='true','data-evolution.enabled'='true')")
            values = _values(kind, rng)
            body = ", ".join(f"({i}, {_sql_literal(type_sql, v)})" for i, v in enumerate(values))
            ctx.sql(f"INSERT INTO t (id, v) VALUES {body}")
            ctx.sql(f"CALL sys.create_global_index(table => 'default.t', index_column => 'v', "
                    f"index_type => 'btree', options => '{options}')")
            rows = pa.Table.from_batches(ctx.sql('SELECT "_ROW_ID", v FROM t ORDER BY "_ROW_ID"'))
            (index_file,) = glob.glob(os.path.join(wh, "default.db", "t", "index", "btree-global-index-*.index"))
            shutil.copy(index_file, HERE / f"{name}.index")
            with open(HERE / f"{name}.tsv", "w", encoding="utf-8", newline="\n") as fh:
                for rid, v in zip(rows.column(0).to_pylist(), rows.column(1).to_pylist()):
                    fh.write(f"{rid}\t{_tsv_value(v)}\n")
            opts = dict(kv.split("=") for kv in options.split(","))
            lines.append("\t".join([f"{name}.index", f"{name}.tsv", bgix_type,
                                    opts.get("btree-index.file-version", "1"),
                                    opts.get("btree-index.compression", "none"),
                                    opts["btree-index.block-size"], options]))
        finally:
            shutil.rmtree(wh, ignore_errors=True)
    (HERE / "vectors.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
