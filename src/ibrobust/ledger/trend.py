"""Does a verdict move with scale? The trend of each claim over the rungs of a scale ladder.

A study with a ``scale`` block runs once per rung (the study ``<name>@<key>=<value>``,
:func:`ibrobust.studies.expansion.expand_scale`); the ledger evaluates each rung like any
study. For every claim (id and setting) of a ladder, :func:`trends` compares the rungs: the
verdict at each rung, and whether our number grows, shrinks or stays as the scale rises,
judged on the intervals of the smallest and the largest rung: their difference gets the
half-width sqrt(h_first^2 + h_last^2) (the rungs are independent runs); the trend is "grows"
when the difference minus that half-width is above 0, "shrinks" when the difference plus it
is below 0, else "steady". A rung without an interval (one unit) leaves the trend "unknown".
Pure pandas on the ledger table (:data:`ibrobust.ledger.table.COLUMNS`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ibrobust.studies.expansion import Rung

GROWS, SHRINKS, STEADY, UNKNOWN = "grows", "shrinks", "steady", "unknown"
TREND_COLUMNS = [
    "ladder",
    "key",
    "id",
    "setting",
    "rungs",
    "verdicts",
    "means",
    "intervals",
    "difference",
    "difference_lo",
    "difference_hi",
    "trend",
    "verdict_stable",
]


def trends(ledger: pd.DataFrame, rungs: Mapping[str, Rung]) -> pd.DataFrame:
    """One row per (ladder, claim id, setting) over the rung studies in ``rungs`` (study
    name -> :class:`Rung`): the rungs in increasing value, each rung's verdict, mean and
    interval, the last-minus-first difference with its interval, the trend and whether the
    verdict is the same at every rung. A claim's rows are matched across rungs by id and
    their order within the rung (every rung declares the same claims, in the same order;
    settings may name the rung's dataset or model variant), shown with the smallest
    rung's setting."""
    rows = ledger[ledger["study"].isin(list(rungs)) & (ledger["verdict"] != "not run")]
    rows = rows.assign(
        _ladder=[rungs[s].ladder for s in rows["study"]],
        _key=[rungs[s].key for s in rows["study"]],
        _value=[rungs[s].value for s in rows["study"]],
        _nth=rows.groupby(["study", "id"], sort=False).cumcount(),
    )
    out = []
    for (ladder, key, cid, _), g in rows.groupby(["_ladder", "_key", "id", "_nth"], sort=False):
        g = g.sort_values("_value")
        setting = g["setting"].iloc[0]
        first, last = g.iloc[0], g.iloc[-1]
        diff, lo, hi = difference(first, last) if len(g) > 1 else (math.nan,) * 3
        trend = _trend(lo, hi)
        out.append(
            dict(
                ladder=ladder,
                key=key,
                id=cid,
                setting=setting,
                rungs=" -> ".join(f"{v:g}" for v in g["_value"]),
                verdicts=" -> ".join(g["verdict"]),
                means=" -> ".join(f"{v:.4g}" for v in g["ours_mean"]),
                intervals=" -> ".join(_iv(r) for _, r in g.iterrows()),
                difference=diff,
                difference_lo=lo,
                difference_hi=hi,
                trend=trend,
                verdict_stable=bool(g["verdict"].nunique() == 1),
            )
        )
    return pd.DataFrame(out, columns=TREND_COLUMNS)


def _half(row: Mapping, side: str) -> float:
    """The half-width of a row's interval on one side of its mean (inf: none / censored)."""
    lo, hi, m = float(row["ci_lo"]), float(row["ci_hi"]), float(row["ours_mean"])
    if math.isnan(lo) or math.isnan(hi):
        return math.inf
    return m - lo if side == "lo" else hi - m


def difference(before: Mapping, after: Mapping) -> tuple[float, float, float]:
    """``after - before`` of two ledger rows' means (``ours_mean``, ``ci_lo``, ``ci_hi``) of
    independent runs, with its interval ``(difference, lo, hi)``: on each side the half-width
    is sqrt(h_a^2 + h_b^2) of the two rows' half-widths (how far below the difference it may
    lie combines ``after``'s lower half with ``before``'s upper half, and vice versa); an end
    is -inf / inf when a row has no interval or is censored on that side. Shared by
    :func:`trends` (smallest rung -> largest) and :mod:`ibrobust.ledger.diff` (one ledger ->
    another)."""
    d = float(after["ours_mean"]) - float(before["ours_mean"])
    down = math.hypot(_half(after, "lo"), _half(before, "hi"))
    up = math.hypot(_half(after, "hi"), _half(before, "lo"))
    return d, d - down, d + up


def _trend(lo: float, hi: float) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return UNKNOWN
    return GROWS if lo > 0 else SHRINKS if hi < 0 else STEADY


def _iv(row: pd.Series) -> str:
    lo, hi = float(row["ci_lo"]), float(row["ci_hi"])
    if math.isnan(lo):
        return "-"
    return f"[{lo:.3g}, {'inf' if hi == math.inf else f'{hi:.3g}'}]"


def trend_markdown(table: pd.DataFrame) -> str:
    """The trends as markdown, one table per ladder."""
    out = [
        "# Scale ladders: does each verdict move with scale?",
        "",
        "Per claim: the verdict, mean and interval at each rung (smallest first), and the "
        "trend of our number from the smallest to the largest rung (grows / shrinks when the "
        "interval of the difference excludes 0, else steady; unknown when a rung has no "
        "interval).",
        "",
    ]
    for (ladder, key), g in table.groupby(["ladder", "key"], sort=False):
        out += [f"## {ladder}: {key} = {g['rungs'].iloc[0]}", ""]
        out += [
            "| id | setting | verdicts | means | intervals | trend | stable |",
            "|---" * 7 + "|",
        ]
        for _, r in g.iterrows():
            cells = [f"`{r['id']}`", r["setting"], r["verdicts"], r["means"], r["intervals"],
                     _trend_cell(r), "yes" if r["verdict_stable"] else "**no**"]  # fmt: skip
            out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
        out.append("")
    return "\n".join(out) + "\n"


def _trend_cell(r: pd.Series) -> str:
    if r["trend"] == UNKNOWN:
        return UNKNOWN
    hi = "inf" if r["difference_hi"] == math.inf else f"{r['difference_hi']:.3g}"
    return f"{r['trend']} ({r['difference']:+.3g} [{r['difference_lo']:.3g}, {hi}])"
