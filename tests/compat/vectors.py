"""Loading the Java reference vectors (copied into tests/data/global_index): the .tsv inputs and the vectors.tsv table.

Test helper only; parses the rows independently of index_format (plain Python values).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Vector:
    file: Path
    input: Path
    type: str
    compression: str
    level: int
    block_size: int
    row_count: int
    meta_hex: str

    @property
    def id(self) -> str:
        return self.file.name


def load_vectors(vectors_dir: Path) -> list[Vector]:
    out = []
    with open(vectors_dir / "vectors.tsv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            out.append(Vector(vectors_dir / row["file"], vectors_dir / row["input"], row["type"],
                              row["compression"], int(row["level"]), int(row["dictionary_block_size"]),
                              int(row["row_count"]), row["manifest_meta_hex"]))
    return out


def parse_value(type_name: str, text: str) -> object:
    """A Java-spelled value → plain Python (None for NULL)."""
    if text == "NULL":
        return None
    if type_name == "string":
        return text
    if type_name == "boolean":
        return {"true": True, "false": False}[text]
    if type_name in ("float", "double"):
        return float(text)  # Python parses Infinity, -Infinity, NaN, -0.0 like Java prints them
    return int(text)


def load_rows(path: Path, type_name: str) -> list[tuple[int, object]]:
    rows = []
    with open(path, encoding="utf-8", newline="\n") as fh:
        for line in fh.read().split("\n"):
            if not line:
                continue
            rid, _, value = line.partition("\t")
            rows.append((int(rid), parse_value(type_name, value)))
    return rows
