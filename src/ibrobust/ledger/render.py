"""The claims ledger rendered: markdown (claims.md), one HTML page (claims.html, the
report's first page), the README excerpt, and reading a ledger CSV back. Pure functions of
the ledger table (:data:`ibrobust.ledger.table.COLUMNS`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ibrobust.claims.core import NOT_RUN, VERDICTS, SummaryError
from ibrobust.ledger.table import COLUMNS, RULE_BOUNDS


def _num(v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    a = abs(v)
    if a != 0 and (a < 1e-2 or a >= 1e4):
        return f"{v:.2g}"
    return f"{v:.3f}" if a < 10 else f"{v:.1f}"


def units_text(row: Mapping) -> str:
    """``3 seeds``, ``500 points``, ``3 seeds x 500 points``: what the interval stands on."""
    n, unit = int(row["n"]), str(row["unit"])
    unit = unit[:-1] if n == 1 and unit.endswith("s") else unit
    text = f"{n} {unit}"
    pts = int(row.get("points") or 0)
    if pts and "points" not in unit:
        text += f" x {pts} points"
    return text


def interval_text(row: Mapping) -> str:
    lo, hi = row["ci_lo"], row["ci_hi"]
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return "no interval"
    hi_text = "inf" if hi == math.inf else _num(hi)
    return f"[{_num(lo)}, {hi_text}]"


def ours_cell(row: Mapping) -> str:
    """``0.961 [0.954, 0.968] (3 seeds)``: the mean, its interval and the units."""
    if row["verdict"] == NOT_RUN:
        return "-"
    lb = ">= " if row["lower_bound"] else ""
    return f"{lb}{_num(row['ours_mean'])} {interval_text(row)} ({units_text(row)})"


def verdict_cell(row: Mapping) -> str:
    if row["verdict"] == NOT_RUN:
        return f"not run: {row['reason']}"
    if row["reason"]:
        return f"**{row['verdict']}**: {row['reason']}"
    return f"**{row['verdict']}**"


def _escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def ledger_markdown(df: pd.DataFrame, title: str = "Claims ledger") -> str:
    """The ledger as markdown: a counts line, one table per study, and the notes."""
    counts = df["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    out = [
        f"# {title}",
        "",
        f"{len(df)} claims: {summary}. Ours = mean [{_pct(df)} interval] (the units it stands "
        "on); the verdict is decided on the interval (`>=`: some values are censored at the "
        "top of the radius grid, so the interval has no upper end). How each interval is "
        "computed: `ibrobust.claims.intervals`. Generated from the studies' outputs by "
        "`snakemake claims`; never edited by hand.",
        "",
    ]
    for study, g in df.groupby("study", sort=False):
        out += [f"## {study}", ""]
        out.append("| id | setting | claim | paper | ours | verdict | rule |")
        out.append("|---|---|---|---|---|---|---|")
        for _, r in g.iterrows():
            cells = [
                f"`{r['id']}`",
                r["setting"],
                r["claim"],
                r["paper"],
                ours_cell(r),
                verdict_cell(r),
                r["rule"],
            ]
            out.append("| " + " | ".join(_escape(c) for c in cells) + " |")
        out.append("")
    notes = df[(df["note"] != "") & (df["verdict"] != NOT_RUN)]
    out += ["## How each number is measured", ""]
    for _, r in df.drop_duplicates(["study", "id"]).iterrows():
        method = df[(df["id"] == r["id"]) & (df["ci_method"] != "")]["ci_method"]
        how = f" Interval: {', '.join(dict.fromkeys(method))}." if len(method) else ""
        out.append(f"- `{r['id']}`: {r['measure']}.{how}")
    if len(notes):
        out += ["", "## Notes", ""]
        out += [f"- `{r['id']}` ({r['setting']}): {r['note']}." for _, r in notes.iterrows()]
    return "\n".join(out) + "\n"


def ledger_html(df: pd.DataFrame, title: str = "Claims ledger") -> str:
    """The ledger as one self-contained HTML page (the report's first page): the columns of
    :func:`ledger_markdown`'s tables, one table for all studies."""
    view = pd.DataFrame(
        {
            "study": df["study"],
            "id": df["id"],
            "setting": df["setting"],
            "claim": df["claim"],
            "paper": df["paper"],
            "ours": [ours_cell(r) for _, r in df.iterrows()],
            "verdict": [verdict_cell(r).replace("**", "") for _, r in df.iterrows()],
            "rule": df["rule"],
        }
    )
    counts = df["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    return (
        f"<html><head><meta charset='utf-8'><title>{title}</title><style>"
        "table{border-collapse:collapse;font:13px sans-serif}"
        "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}"
        "</style></head><body>"
        f"<h1>{title}</h1><p>{len(df)} claims: {summary}. Ours = mean [{_pct(df)} interval] "
        "(units); the verdict is decided on the interval.</p>"
        + view.to_html(index=False, escape=True)
        + "</body></html>\n"
    )


def _pct(df: pd.DataFrame) -> str:
    """The interval level in words (one level per ledger)."""
    levels = sorted(set(df["level"]))
    if len(levels) != 1:
        raise SummaryError(f"a ledger has one interval level, got {levels}")
    return f"{100 * float(levels[0]):g} %"


def readme_excerpt(
    df: pd.DataFrame, max_rows: int = 8, full: str = "results/claims/claims.md"
) -> str:
    """A short markdown table for the README: the first ``max_rows`` claims that ran (then
    not-run ones), id, ours, paper, verdict; the last line names the ``full`` table."""
    ran = df[df["verdict"] != NOT_RUN]
    pick = pd.concat([ran, df[df["verdict"] == NOT_RUN]]).head(max_rows)
    lines = ["| claim | setting | paper | ours | verdict |", "|---|---|---|---|---|"]
    for _, r in pick.iterrows():
        v = "not run" if r["verdict"] == NOT_RUN else r["verdict"]
        cells = [f"`{r['id']}`", r["setting"], r["paper"], ours_cell(r), v]
        lines.append("| " + " | ".join(_escape(c) for c in cells) + " |")
    counts = df["verdict"].value_counts()
    lines += [
        "",
        f"({len(df)} claims in all: "
        + ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
        + f"; full table in `{full}`.)",
    ]
    return "\n".join(lines) + "\n"


def read_ledger(path: str | Path) -> pd.DataFrame:
    """A ledger CSV written by the claims rule (for :func:`readme_excerpt`)."""
    numeric = ("ours_mean", "ours_spread", "ci_lo", "ci_hi", *RULE_BOUNDS)
    df = pd.read_csv(path, keep_default_na=False, na_values={c: [""] for c in numeric})
    missing = [c for c in COLUMNS if c not in df]
    if missing:
        raise SummaryError(f"{path}: not a ledger, missing columns {missing}")
    df["lower_bound"] = df["lower_bound"].astype(str).str.lower() == "true"
    return df
