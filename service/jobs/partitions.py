"""Paimon's `partitions` argument (spec §7.2) and choosing the data files it selects.

Shared by the build job and the service (which validates the argument before starting a job).
Imports only index_format.errors/options and service.catalog's model and errors.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from index_format.errors import InvalidOptionError
from index_format.options import shown
from service.catalog.catalog_errors import DataFileError
from service.catalog.model import DataFile, Table, UnreadableFile


MAX_PARTITION_SPECS = 10_000  # a longer selection is a mistake (or an attack), never a build


def _invalid(message: str) -> InvalidOptionError:
    err = InvalidOptionError(message)
    err.option = "partitions"  # type: ignore[attr-defined]  # the API names it in the error details
    return err


def format_spec(spec: Mapping[str, str]) -> str:
    """{'dt': '1', 'hh': '0'} → 'dt=1,hh=0' (Paimon's spelling, for messages)."""
    return ",".join(f"{k}={v}" for k, v in spec.items())


def parse_partitions(text: str | Sequence[Mapping[str, object]] | None) -> list[dict[str, str]]:
    """Paimon's `dt=2026-06-18,hh=0;dt=2026-06-19,hh=1` → [{'dt': '2026-06-18', 'hh': '0'}, …].

    None, a blank string and an empty list select every partition (as Paimon's procedure does).
    Raises:
        InvalidOptionError (its `option` is "partitions"): a part that is not `key=value`, an empty key or
            value, a key given twice in one spec, an empty spec (`dt=1;` or `[{}]`), a list item that is not
            an object of plain values, or more than MAX_PARTITION_SPECS specs.
    """
    if text is None or (isinstance(text, str) and not text.strip()):
        return []
    if isinstance(text, str):
        items: list[list[tuple[object, object, str]]] = []
        for spec in text.split(";"):
            parts: list[tuple[object, object, str]] = []
            for part in spec.split(",") if spec.strip() else []:
                key, sep, value = part.partition("=")
                if not sep:
                    raise _invalid(f"partition spec {shown(spec.strip())}: {shown(part.strip())} is not key=value")
                parts.append((key, value, spec.strip()))
            items.append(parts)
    elif isinstance(text, Sequence):
        items = []
        for obj in text:
            if not isinstance(obj, Mapping):
                raise _invalid(f"partitions: {shown(obj)} is not an object of partition column → value")
            items.append([(k, v, format_spec({str(k): str(v) for k, v in obj.items()})) for k, v in obj.items()])
    else:
        raise _invalid(f"partitions must be a 'k=v,k=v;k=v' string or a list of objects, "
                       f"not {type(text).__name__}")
    if len(items) > MAX_PARTITION_SPECS:
        raise _invalid(f"partitions: {len(items)} partition specs; at most {MAX_PARTITION_SPECS} are allowed")
    out: list[dict[str, str]] = []
    for parts in items:
        if not parts:
            raise _invalid(f"partitions {shown(text)}: an empty partition spec (a stray ';' or {{}}) is not allowed "
                           "(write 'k=v,k=v;k=v', or leave partitions out to build every partition)")
        d: dict[str, str] = {}
        for name, raw, spec_text in parts:
            if not isinstance(name, str) or not isinstance(raw, (str, int)) or isinstance(raw, bool):
                raise _invalid(f"partition spec {shown(spec_text)}: {shown(name)}: {shown(raw)} is not a plain value")
            k, v = name.strip(), str(raw).strip()
            if not k:
                raise _invalid(f"partition spec {shown(spec_text)}: a key is empty")
            if not v:
                raise _invalid(f"partition spec {shown(spec_text)}: the value of {shown(k)} is empty")
            if k in d:
                raise _invalid(f"partition spec {shown(spec_text)} names {shown(k)} twice")
            d[k] = v
        out.append(d)
    return out


def check_keys(partitions: Sequence[Mapping[str, str]], keys: Sequence[str], table: str) -> None:
    """Raises InvalidOptionError when a spec names a key that is not one of the table's partition `keys`."""
    for spec in partitions:
        unknown = set(spec) - set(keys)
        if unknown:
            raise _invalid(f"partition keys {shown(sorted(unknown))} are not partition columns "
                           f"{list(keys)} of table {table!r}")


def unmatched_specs(partitions: Sequence[Mapping[str, str]],
                    file_partitions: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """The specs of `partitions` that no data file's partition matches."""
    seen = {tuple(sorted(p.items())) for p in file_partitions}
    return [dict(s) for s in partitions
            if not any(all(dict(p).get(k) == v for k, v in s.items()) for p in seen)]


def check_matches(partitions: Sequence[Mapping[str, str]], file_partitions: Iterable[Mapping[str, str]],
                  table: str) -> None:
    """Raises InvalidOptionError naming every spec of `partitions` that matches no data file."""
    missing = unmatched_specs(partitions, file_partitions)
    if missing:
        raise _invalid(f"partitions {shown(';'.join(format_spec(s) for s in missing), 400)} match no data file of "
                       f"table {table!r}; nothing would be built")


def select_files(files: Sequence[DataFile], table: Table, partitions: list[dict[str, str]]) -> list[DataFile]:
    """Files of the selected partitions (all files when `partitions` is empty).

    Raises:
        InvalidOptionError: partitions given for an unpartitioned table, or naming unknown partition keys.
    """
    if not partitions:
        return list(files)
    if not table.partition_columns:
        raise _invalid(f"table {table.name!r} is not partitioned; 'partitions' cannot be used")
    check_keys(partitions, table.partition_columns, table.name)
    return [f for f in files if any(all(f.partition.get(k) == v for k, v in s.items()) for s in partitions)]


def check_readable(unreadable: Sequence[UnreadableFile], table: Table, partitions: list[dict[str, str]]) -> None:
    """Raises DataFileError naming the first unreadable data file of the selected partitions: a build
    that skipped it would report a complete index over a table it did not read."""
    root = table.location.rstrip("/")
    for u in unreadable:
        levels = u.path[len(root) + 1:].split("/")[:-1] if u.path.startswith(root + "/") else []
        found = dict(level.split("=", 1) for level in levels if "=" in level)
        if not partitions or any(all(found.get(k) == v for k, v in s.items()) for s in partitions):
            raise DataFileError(u.path, f"{u.reason} (fix or remove the file, then build again)")
