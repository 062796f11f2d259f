"""docs/operations.md's infrastructure table states true line counts: every piece's files
(a folder: its .py files) have the lines its row says, and so do the rule scripts and the
infrastructure's total in the text beside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "operations.md"
INFRA = ["workflow_scripts/_tracking", "workflow_scripts/_job.py", "workflow_scripts/_lifecycle.py",
         "workflow_scripts/_signals.py", "workflow_scripts/_scheduler.py"]  # fmt: skip


def lines(rel: str) -> int:
    path = ROOT / rel
    files = sorted(path.glob("*.py")) if path.is_dir() else [path]
    return sum(len(f.read_text().splitlines()) for f in files)


def section() -> str:
    text = DOC.read_text()
    start = text.index("## What the infrastructure adds, and why")
    return text[start : text.index("\n## ", start + 1)]


def number(text: str) -> int:
    return int(text.replace(",", ""))


def test_each_row_of_the_table_has_its_files_line_count():
    rows = [r for r in section().splitlines() if r.startswith("| `")]
    assert len(rows) >= 8
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        paths = [p for p in re.findall(r"`([^`]+)`", cells[0]) if (ROOT / p).exists()]
        counts = [number(n) for n in cells[-1].split("+")]
        assert paths and len(paths) == len(counts), row
        assert [lines(p) for p in paths] == counts, row


def test_the_rule_scripts_and_the_infrastructure_total_are_true():
    text = section()
    scripts = sum(lines(str(f.relative_to(ROOT)))
                  for f in (ROOT / "workflow_scripts").glob("[!_]*.py"))  # fmt: skip
    (said,) = re.findall(r"the rule scripts themselves are ([\d,]+) lines", text)
    assert number(said) == scripts
    (total,) = re.findall(r"went from 3,364 lines to ([\d,]+)", text)
    assert number(total) == sum(lines(p) for p in INFRA)
