"""Print (or splice into the README) the short claims-ledger excerpt of a built ledger.

    python workflow_scripts/claims_readme_excerpt.py results/claims/claims.csv [--rows 8]
    python workflow_scripts/claims_readme_excerpt.py results/claims/claims.csv --readme README.md

With ``--readme``, the text between the lines ``<!-- claims-excerpt:start -->`` and
``<!-- claims-excerpt:end -->`` is replaced by the excerpt (an error if the markers are
missing): the README's ledger excerpt is regenerated, never typed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ibrobust.ledger.render import read_ledger, readme_excerpt  # noqa: E402

START, END = "<!-- claims-excerpt:start -->", "<!-- claims-excerpt:end -->"


def splice(text: str, excerpt: str, where: str) -> str:
    """``text`` with the lines between the START and END markers replaced by ``excerpt``."""
    if START not in text or END not in text or text.index(START) > text.index(END):
        raise SystemExit(f"{where}: needs the lines {START} and {END} (in that order)")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{excerpt}{END}{tail}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ledger", type=Path, help="claims.csv written by `snakemake claims`")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--readme", type=Path, help="splice into this file instead of printing")
    a = ap.parse_args()
    md = a.ledger.with_suffix(".md").as_posix()  # named from the project root when we can
    full = "results/" + md.split("results/", 1)[1] if "results/" in md else md
    excerpt = readme_excerpt(read_ledger(a.ledger), max_rows=a.rows, full=full)
    if a.readme is None:
        sys.stdout.write(excerpt)
        return
    a.readme.write_text(splice(a.readme.read_text(), excerpt, str(a.readme)))
    print(f"{a.readme}: claims excerpt regenerated from {a.ledger}")


if __name__ == "__main__":
    main()
