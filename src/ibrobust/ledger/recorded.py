"""Siblings measured earlier and kept as numbers (e.g. configs/sweep_fa_rate_stop.csv: a
sweep run before the sweep mechanism existed): each recorded sibling's mean, sd and units
become a ledger row judged by the base row's rule (t interval over the recorded units), for
:func:`ibrobust.ledger.sensitivity.sensitivity` to compare like any sibling's row. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ibrobust.claims.verdicts import FAILS, HOLDS, WEAKER
from ibrobust.ledger.siblings import Change, Sibling, _num

RECORDED_COLUMNS = ("sibling", "base", "id", "nth", "changes", "measure", "mean", "sd", "n",
                    "unit", "source")  # fmt: skip


def _change_of(text: str) -> Change:
    """``optimizers[gd].lr: 0.5 -> 0.0316`` -> Change."""
    key, _, rest = text.partition(":")
    b, arrow, v = rest.partition("->")
    if not (key.strip() and arrow):
        raise ValueError(f"a change is 'key: base -> value', got {text!r}")

    def value(s: str) -> Any:
        s = s.strip()
        try:
            return float(s)
        except ValueError:
            return s

    return Change(key.strip(), value(b), value(v))


def interval_verdict(lo: float, hi: float, row: Mapping) -> str:
    """The verdict of an interval [lo, hi] under a ledger row's rule bounds (``strong_lo`` ..
    ``weak_hi``), as :func:`ibrobust.claims.rules.decide` reads them with closed bounds:
    holds inside the strong region, holds weaker inside the weak one, does not hold wholly
    outside it, else inconclusive."""
    s_lo, s_hi, w_lo, w_hi = (
        _num(row[k]) for k in ("strong_lo", "strong_hi", "weak_lo", "weak_hi")
    )
    if s_lo <= lo and hi <= s_hi:
        return HOLDS
    if w_lo <= lo and hi <= w_hi:
        return WEAKER
    if hi < w_lo or lo > w_hi:
        return FAILS
    return "inconclusive"


def recorded_rows(
    recorded: pd.DataFrame, base: pd.DataFrame, level: float = 0.95
) -> tuple[pd.DataFrame, dict[str, Sibling], list[str]]:
    """Sweep-ledger rows of siblings measured earlier and kept as (mean, sd, n) of one value
    per unit (:data:`RECORDED_COLUMNS`, e.g. ``configs/sweep_fa_rate_stop.csv``): each gets
    the Student t interval mean +- t(n-1) sd / sqrt(n) and the verdict of its base row's
    rule *as the base ledger states it now* (:func:`interval_verdict`), so a rebuilt base
    ledger re-judges them. A record whose ``measure`` is no longer its base row's (the claim
    now measures something else) is skipped, with a note. Returns (rows, siblings, notes)."""
    from scipy import stats

    missing = [c for c in RECORDED_COLUMNS if c not in recorded]
    if missing:
        raise ValueError(f"recorded sweep: missing columns {missing}")
    keyed = _by_nth(base)
    rows, sibs, notes = [], {}, []
    for _, r in recorded.iterrows():
        hit = keyed[(keyed["study"] == r["base"]) & (keyed["id"] == r["id"])
                    & (keyed["_nth"] == int(r["nth"]))]  # fmt: skip
        if hit.empty:
            notes.append(f"{r['sibling']} {r['id']}: no such row in the base ledger")
            continue
        b = hit.iloc[0]
        if str(b["measure"]) != str(r["measure"]):
            notes.append(f"{r['sibling']} {r['id']}: the claim's measure changed since it was "
                         "recorded; not compared")  # fmt: skip
            continue
        n, mean, sd = int(r["n"]), float(r["mean"]), float(r["sd"])
        half = stats.t.ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n) if n > 1 else math.nan
        lo, hi = mean - half, mean + half
        verdict = interval_verdict(lo, hi, b) if n > 1 else "inconclusive"
        row = b.drop(labels="_nth").to_dict()
        row.update(study=r["sibling"], ours_mean=mean, ours_spread=sd, ci_lo=lo, ci_hi=hi, n=n,
                   unit=r["unit"], verdict=verdict, reason="", fragile="", fragile_reason="",
                   note=f"recorded: {r['source']}")  # fmt: skip
        rows.append(row)
        changes = tuple(_change_of(t) for t in str(r["changes"]).split(";") if t.strip())
        sibs[str(r["sibling"])] = Sibling(str(r["sibling"]), str(r["base"]), changes)
    return pd.DataFrame(rows, columns=list(base.columns)), sibs, notes


def _by_nth(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``_nth``: a row's rank among its study's rows of the same claim id."""
    return df.assign(_nth=df.groupby(["study", "id"], sort=False).cumcount())
