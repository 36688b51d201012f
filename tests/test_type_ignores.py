"""Every `# type: ignore` in the product names its error code and says why (issue 35): a bare ignore hides every
error on its line, and one without a reason cannot be judged when the code around it changes."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[\w\-, ]+\])?(?P<rest>.*)$")


def test_every_type_ignore_has_a_code_and_a_reason() -> None:
    bad = []
    for top in ("index_format", "service"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = _IGNORE.search(line)
                if m and (not m.group("code") or not re.match(r"\s*#\s*\S", m.group("rest"))):
                    bad.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert bad == [], "type: ignore without an error code and a reason:\n" + "\n".join(bad)
