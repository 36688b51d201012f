"""Parsers for the Paimon file-index reference files in tests/data/file_index (bitmap, range-bitmap, bsi,
bloom-filter, container): vectors.tsv, the `<data>.tsv` input rows and the `<data>.queries.tsv` answers.

Test helper only: values are plain Python (None, str, bool, int, float, Decimal, date, time, datetime, dict)
parsed from Java's spellings, independently of index_format.
"""
from __future__ import annotations

import csv
import datetime as dt
import decimal
import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.data import FILE_INDEX

__all__ = ["FILE_INDEX", "Query", "VectorEntry", "load_queries", "load_rows", "load_table", "load_vectors", "query_sql",
           "parse_options", "parse_positions", "parse_value", "sql_literal"]

NULL = "NULL"


@dataclass(frozen=True)
class VectorEntry:
    """One line of vectors.tsv: a Java-written index file and what it was made from."""

    file: Path
    index_type: str
    data_type: str          # Java spelling: INT, STRING, TIMESTAMP(3), or "a:STRING,b:BIGINT" for containers
    options: dict[str, str]  # empty for "-"
    rows: int
    nulls: int | None
    distinct: int | None
    size: int
    sha256: str
    input: Path
    queries: Path | None
    query_count: int
    detail: str

    @property
    def id(self) -> str:
        return f"{self.index_type}/{self.file.name}"


def parse_options(text: str) -> dict[str, str]:
    """`chunk-size=24b;x=y` → dict; `-` → {}."""
    if text in ("-", ""):
        return {}
    out = {}
    for part in text.split(";"):
        key, _, value = part.partition("=")
        out[key] = value
    return out


def _opt_int(text: str) -> int | None:
    return None if text in ("-", "") else int(text)


def load_vectors(base: Path = FILE_INDEX, index_type: str | None = None) -> list[VectorEntry]:
    """Every vectors.tsv line (optionally only one index type)."""
    out = []
    with open(base / "vectors.tsv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            if index_type is not None and row["index_type"] != index_type:
                continue
            out.append(VectorEntry(
                file=base / row["file"], index_type=row["index_type"], data_type=row["data_type"],
                options=parse_options(row["options"]), rows=int(row["rows"]), nulls=_opt_int(row["nulls"]),
                distinct=_opt_int(row["distinct"]), size=int(row["bytes"]), sha256=row["sha256"],
                input=base / row["input_tsv"],
                queries=None if row["queries_tsv"] in ("-", "") else base / row["queries_tsv"],
                query_count=int(row["queries"]), detail=row["detail"]))
    return out


_PRECISION = re.compile(r"^\s*([A-Za-z_ ]+?)\s*(?:\((\d+)(?:\s*,\s*(\d+))?\))?\s*$")


def _base_type(data_type: str) -> tuple[str, int | None, int | None]:
    m = _PRECISION.match(data_type)
    if not m:
        raise ValueError(f"cannot parse type {data_type!r}")
    p = int(m.group(2)) if m.group(2) else None
    s = int(m.group(3)) if m.group(3) else None
    return m.group(1).upper(), p, s


def parse_value(data_type: str, text: str) -> object:
    """A value spelled as in the .tsv files (Java's toString forms) → Python; `NULL` → None.

    DOUBLE/FLOAT: NaN, Infinity, -Infinity, -0.0, 1.0E-7. DATE: yyyy-MM-dd. TIMESTAMP(p): local date-time
    `yyyy-MM-dd HH:mm:ss[.f]` → naive datetime. MAP<K,V>: `k1=v1;k2=v2` (`k=NULL`, empty = {}).
    """
    if text == NULL:
        return None
    base, _, _ = _base_type(data_type) if not data_type.upper().startswith("MAP") else ("MAP", None, None)
    if base in ("STRING", "VARCHAR", "CHAR"):
        return text
    if base == "BOOLEAN":
        return {"true": True, "false": False}[text]
    if base in ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"):
        return int(text)
    if base in ("FLOAT", "DOUBLE"):
        return float(text)  # Python reads Java's NaN / Infinity / -0.0 / 1.0E-7 spellings
    if base == "DECIMAL":
        return decimal.Decimal(text)
    if base == "DATE":
        return dt.date.fromisoformat(text)
    if base == "TIME":
        return dt.time.fromisoformat(text)
    if base in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL TIME ZONE"):
        return dt.datetime.fromisoformat(text.replace(" ", "T", 1))
    if base == "MAP":
        inner = data_type[data_type.index("<") + 1:data_type.rindex(">")]
        ktype, _, vtype = inner.partition(",")
        if text == "":
            return {}
        out: dict[object, object] = {}
        for part in text.split(";"):
            k, _, v = part.partition("=")
            out[parse_value(ktype.strip(), k)] = parse_value(vtype.strip(), v)
        return out
    raise ValueError(f"no parser for type {data_type!r}")


def _lines(path: Path) -> list[str]:
    """Lines split on LF only (values may hold other line-breaking characters such as U+2028)."""
    text = path.read_bytes().decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def load_rows(path: Path, data_type: str) -> list[object]:
    """Values of a single-column input `.tsv` in row order (positions checked to be 0..n-1)."""
    out = []
    for i, line in enumerate(_lines(path)):
        pos, _, value = line.partition("\t")
        if int(pos) != i:
            raise ValueError(f"{path.name}: row {i} has position {pos}")
        out.append(parse_value(data_type, value))
    return out


def load_table(path: Path) -> tuple[list[tuple[str, str]], list[list[object]]]:
    """A container input: `#` header naming `col:TYPE` per column (after the position), then rows."""
    lines = _lines(path)
    header = lines[0].lstrip("#").split("\t")
    cols = []
    for spec in header[1:]:
        name, _, typ = spec.partition(":")
        cols.append((name, typ))
    rows = []
    for i, line in enumerate(lines[1:]):
        parts = line.split("\t")
        if int(parts[0]) != i:
            raise ValueError(f"{path.name}: row {i} has position {parts[0]}")
        rows.append([parse_value(t, v) for (_, t), v in zip(cols, parts[1:])])
    return cols, rows


def parse_positions(text: str) -> list[int]:
    """`0-2,5,7-9` → [0, 1, 2, 5, 7, 8, 9]; empty → []."""
    out: list[int] = []
    if not text:
        return out
    for part in text.split(","):
        a, sep, b = part.partition("-")
        if sep:
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(a))
    return out


@dataclass(frozen=True)
class Query:
    """One answer line. `rows` is None when the reader returned no bitmap (`outcome` REMAIN or SKIP) and
    for bloom-filter answers (`outcome` "true"/"false"); otherwise `outcome` is "ROWS"."""

    op: str                          # =, !=, <, <=, >, >=, IN, NOT IN, IS NULL, IS NOT NULL, BETWEEN, TOPK, BOTTOMK
    literals: list[str]              # raw spellings; parse with parse_value(type, text)
    count: int | None
    rows: list[int] | None
    outcome: str
    column: str | None = None        # container files only
    k: int | None = None             # TOPK / BOTTOMK
    nulls_first: bool | None = None
    strict: bool | None = None
    line: int = 0
    raw: str = field(default="", repr=False)

    @property
    def might_contain(self) -> bool | None:
        return {"true": True, "false": False}.get(self.outcome)

    def values(self, data_type: str) -> list[object]:
        return [parse_value(data_type, t) for t in self.literals]

    @property
    def label(self) -> str:
        head = self.op if self.k is None else (
            f"{self.op} {self.k} {'NULLS_FIRST' if self.nulls_first else 'NULLS_LAST'} "
            f"{'strict' if self.strict else 'nonstrict'}")
        lits = ",".join(t[:20] for t in self.literals)
        col = f"{self.column}:" if self.column else ""
        return f"{self.line}:{col}{head}({lits})"


_TOPN = re.compile(r"^(TOPK|BOTTOMK) (\d+) (NULLS_FIRST|NULLS_LAST) (strict|nonstrict)$")


def load_queries(path: Path, *, container: bool = False) -> list[Query]:
    """Every line of a `.queries.tsv` (container files: a leading column name)."""
    out = []
    for n, line in enumerate(_lines(path), start=1):
        parts = line.split("\t")
        column = None
        if container:
            column, parts = parts[0], parts[1:]
        op, count_text, rows_text, literals = parts[0], parts[1], parts[2], parts[3:]
        k = nulls_first = strict = None
        m = _TOPN.match(op)
        if m:
            op, k = m.group(1), int(m.group(2))
            nulls_first, strict = m.group(3) == "NULLS_FIRST", m.group(4) == "strict"
        if rows_text in ("REMAIN", "SKIP", "true", "false"):
            rows, outcome = None, rows_text
        else:
            rows, outcome = parse_positions(rows_text), "ROWS"
        count = None if count_text == "-" else int(count_text)
        if rows is not None and count is not None and len(rows) != count:
            raise ValueError(f"{path.name}:{n}: count {count} but {len(rows)} positions")
        out.append(Query(op, literals, count, rows, outcome, column, k, nulls_first, strict, n, line))
    return out


def sql_literal(data_type: str, text: str) -> str:
    """A reference-file literal spelled as SQL for `bgix file query` (independent of index_format)."""
    if text == NULL:
        return "NULL"
    base, _, _ = _base_type(data_type)
    if base in ("STRING", "VARCHAR", "CHAR"):
        return "'" + text.replace("'", "''") + "'"
    if base == "BOOLEAN":
        return text.upper()
    if base in ("FLOAT", "DOUBLE"):
        return f"CAST('{text}' AS {base})"
    if base == "DATE":
        return f"DATE '{text}'"
    if base.startswith("TIMESTAMP"):
        return f"TIMESTAMP '{text}'"
    return text


_SQL_OPS = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def query_sql(q: Query, data_type: str, column: str = "v") -> str:
    """The SQL text asking what `q` asked (TOPK/BOTTOMK as ORDER BY ... LIMIT k)."""
    col = '"' + column.replace('"', '""') + '"'
    lits = [sql_literal(data_type, t) for t in q.literals]
    if q.op in _SQL_OPS:
        return f"{col} {_SQL_OPS[q.op]} {lits[0]}"
    if q.op in ("IN", "NOT IN"):
        return f"{col} {q.op} ({', '.join(lits)})"
    if q.op in ("IS NULL", "IS NOT NULL"):
        return f"{col} {q.op}"
    if q.op == "BETWEEN":
        return f"{col} BETWEEN {lits[0]} AND {lits[1]}"
    if q.op in ("TOPK", "BOTTOMK"):
        direction = "DESC" if q.op == "TOPK" else "ASC"
        nulls = "NULLS FIRST" if q.nulls_first else "NULLS LAST"
        more = "" if q.strict else ", other"
        return f"ORDER BY {col} {direction} {nulls}{more} LIMIT {q.k}"
    raise ValueError(f"no SQL for {q.op}")
