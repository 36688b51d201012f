"""The id sets of this folder (NAME.ids, NAME.scores) as bgix reads them, and bgix's bytes of the unscored ones.

    PYTHONPATH=. .venv/bin/python tests/data/global_index_result/id_sets.py OUT_DIR   # OUT_DIR/NAME.bgix.bin

make.sh runs it so that Paimon's Java reads bgix's bytes back; the tests import `id_set` and `scores`.
An .ids line is "first", "first last" (inclusive, added as one range, as Java's addRange) or "first last step"
(added one id at a time); '#' starts a comment. The way ids are added decides which containers hold them before
run optimization, and so (on ties) the bytes: both sides add them the same way.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from pyroaring import BitMap64

HERE = Path(__file__).resolve().parent


def names() -> list[str]:
    """Every id set of the folder, sorted."""
    return sorted(p.stem for p in HERE.glob("*.ids"))


def id_set(name: str) -> BitMap64:
    """NAME.ids as a bitmap, its pieces added in file order as the Java side adds them."""
    bm = BitMap64()
    for raw in (HERE / f"{name}.ids").read_text(encoding="utf-8").splitlines():
        fields = [int(f) for f in raw.split("#", 1)[0].split()]
        if len(fields) == 1:
            bm.add(fields[0])
        elif len(fields) == 2:
            bm.add_range(fields[0], fields[1] + 1)
        elif fields:
            for i in range(fields[0], fields[1] + 1, fields[2]):
                bm.add(i)
    return bm


def scores(name: str) -> np.ndarray | None:
    """NAME.scores as float32 (Java's Float.parseFloat of each line), or None for an unscored set."""
    path = HERE / f"{name}.scores"
    if not path.exists():
        return None
    return np.array([float(s) for s in path.read_text(encoding="utf-8").split()], dtype=np.float32)


def main(out: Path) -> None:
    from index_format.global_index_result import encode

    out.mkdir(parents=True, exist_ok=True)
    for name in names():
        if scores(name) is None:
            (out / f"{name}.bgix.bin").write_bytes(encode(id_set(name)))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
