"""Paimon's `partitions` argument (spec §7.2) and choosing the data files it selects.

Shared by the build job and the service (which validates the argument before starting a job).
Imports only index_format.errors and service.catalog.model.
"""
from __future__ import annotations

from collections.abc import Sequence

from index_format.errors import InvalidOptionError
from service.catalog.model import DataFile, Table


def parse_partitions(text: str | Sequence[dict[str, str]] | None) -> list[dict[str, str]]:
    """Paimon's `dt=2026-06-18,hh=0;dt=2026-06-19,hh=1` → [{'dt': '2026-06-18', 'hh': '0'}, …].

    Raises:
        InvalidOptionError: a spec part is not `key=value`.
    """
    if text is None or text == "":
        return []
    if not isinstance(text, str):
        return [{str(k): str(v) for k, v in d.items()} for d in text]
    out = []
    for spec in text.split(";"):
        if not spec.strip():
            continue
        d: dict[str, str] = {}
        for part in spec.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise InvalidOptionError(f"partition spec {spec.strip()!r}: {part.strip()!r} is not key=value")
            d[key.strip()] = value.strip()
        out.append(d)
    return out


def select_files(files: Sequence[DataFile], table: Table, partitions: list[dict[str, str]]) -> list[DataFile]:
    """Files of the selected partitions (all files when `partitions` is empty).

    Raises:
        InvalidOptionError: partitions given for an unpartitioned table, or naming unknown partition keys.
    """
    if not partitions:
        return list(files)
    if not table.partition_columns:
        raise InvalidOptionError(f"table {table.name!r} is not partitioned; 'partitions' cannot be used")
    for spec in partitions:
        unknown = set(spec) - set(table.partition_columns)
        if unknown:
            raise InvalidOptionError(f"partition keys {sorted(unknown)} are not partition columns "
                             f"{table.partition_columns} of table {table.name!r}")
    return [f for f in files if any(all(f.partition.get(k) == v for k, v in s.items()) for s in partitions)]
