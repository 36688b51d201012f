"""A table with its own row-id column (ids with gaps): every answer, complements included, holds only ids
present in the table — checked against pandas on the source rows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from service.api.app import create_app
from tests.api.helpers import TestClient, make_settings, wait_job


def test_complements_never_return_ids_missing_from_the_table(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    rid = np.sort(rng.choice(50_000, size=1_200, replace=False)).astype("int64")  # sparse, with gaps
    status = rng.choice(np.array(["a", "b", "c", None], dtype=object), size=len(rid))
    df = pd.DataFrame({"rid": rid, "status": status})
    data = tmp_path / "data" / "t"
    data.mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(df.iloc[:700], preserve_index=False), data / "part-0.parquet")
    pq.write_table(pa.Table.from_pandas(df.iloc[700:], preserve_index=False), data / "part-1.parquet")

    with TestClient(create_app(make_settings(tmp_path))) as client:
        r = client.put("/v1/tables/t", json={"location": str(data), "row_id_column": "rid"})
        assert r.status_code == 200, r.text
        r = client.post("/v1/create_global_index", json={
            "table": "t", "index_column": "status",
            "options": {"sorted-index.records-per-range": "20000"}})  # several ranges with gaps
        assert r.status_code == 202, r.text
        assert wait_job(client, r.json()["job_id"])["state"] == "succeeded"

        cases = {
            "status != 'a'": df.status.notna() & (df.status != "a"),
            "status NOT IN ('a', 'b')": df.status.notna() & ~df.status.isin(["a", "b"]),
            "status IS NOT NULL": df.status.notna(),
            "NOT status = 'b'": df.status.notna() & (df.status != "b"),
            "NOT (status IS NULL)": df.status.notna(),
            "status IS NULL OR status = 'c'": df.status.isna() | (df.status == "c"),
        }
        for where, mask in cases.items():
            r = client.post("/v1/tables/t/query", json={"where": where, "limit": 100_000})
            assert r.status_code == 200, r.text
            assert r.json()["row_ids"] == df.rid[mask].tolist(), where
