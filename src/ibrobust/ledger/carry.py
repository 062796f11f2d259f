"""Carrying measurements into a ledger built where some studies were not rebuilt: a row the
new ledger marks *not run* because its outputs are absent takes the measured columns of the
same claim (study, id, setting) from an earlier ledger, and its verdict is decided again
under the new row's rule (:func:`ibrobust.ledger.recorded.interval_verdict`), so a committed
ledger never mixes an old verdict with a new rule. Only where that re-decision is sound:
the measure is the same and the form reads one interval against bounds (bound, direction,
equivalence). A row whose measure or per-cell form changed stays *not run*, with the reason;
one that was *not applicable* (by the study's design) is so again, and listed once where
another study judges the claim (:func:`ibrobust.ledger.one_verdict.one_verdict_per_claim`).
Every row whose rule and measure are the same as the earlier row's keeps its
*setting-dependent* flag (the sweep judged that rule). Pure (tables in, table out);
``ibrobust claims carry`` is the command."""

from __future__ import annotations

import math

import pandas as pd

from ibrobust.claims.verdicts import NOT_APPLICABLE, NOT_RUN
from ibrobust.ledger.one_verdict import one_verdict_per_claim
from ibrobust.ledger.recorded import interval_verdict

KEY = ("study", "id", "setting")
# what a study's run measured: copied from the earlier ledger
MEASURED = ("ours_mean", "ours_spread", "ci_lo", "ci_hi", "ci_method", "n", "unit", "points",
            "lower_bound", "fragile", "fragile_reason")  # fmt: skip
# the rule: its form and bounds (its text also names the interval's level, which a look of
# `snakemake decide` changes without changing the rule)
RULE = ("form", "strong_lo", "strong_hi", "weak_lo", "weak_hi")
# forms whose verdict is one interval against the bounds (existential / universal / asymptotic
# rows are decided per cell or along a trend: their stored interval is not enough)
ONE_INTERVAL = ("bound", "direction", "equivalence")
FLAG = "setting_dependent"  # kept from the earlier ledger where the rule is the same


def _absent(row: pd.Series) -> bool:
    return row["verdict"] == NOT_RUN and "absent" in str(row["reason"])


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return str(a) == str(b)


def _interval(row: pd.Series) -> tuple[float, float] | None:
    try:
        lo, hi = float(row["ci_lo"]), float(row["ci_hi"])
    except (TypeError, ValueError):
        return None
    return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)


def _same_rule(prev: pd.Series, row: pd.Series, measure: bool = True) -> bool:
    keys = (*RULE, "measure") if measure else RULE
    return all(_same(prev.get(k), row[k]) for k in keys)


def _keep_flags(out: pd.DataFrame, i, prev: pd.Series) -> None:
    """The earlier row's setting-dependent flag (its sweep, ibrobust.ledger.sensitivity),
    where the new row has none and the rule and measure are the same: the sweep judged
    this rule."""
    if str(out.at[i, FLAG]) in ("", "nan") and str(prev.get(FLAG, "")) not in ("", "nan"):
        out.at[i, FLAG] = prev[FLAG]
        out.at[i, FLAG + "_reason"] = prev.get(FLAG + "_reason", "")


def carry(new: pd.DataFrame, old: pd.DataFrame, old_name: str) -> tuple[pd.DataFrame, list[str]]:
    """``new`` with its output-absent rows measured from ``old`` (named ``old_name`` in each
    carried row's note), and one line per carried or refused row."""
    before = {tuple(r[k] for k in KEY): r for _, r in old.iterrows()}
    # a claim with one row in each ledger is the same row when only its setting's text
    # changed (e.g. the seed count written into it)
    alone = {k: g.iloc[0] for k, g in old.groupby(["study", "id"]) if len(g) == 1}
    once = new.groupby(["study", "id"])["setting"].transform("size") == 1
    out, log = new.copy(), []
    for i, row in new.iterrows():
        key = tuple(row[k] for k in KEY)
        prev = before.get(key)
        if prev is None and once[i]:
            prev = alone.get(key[:2])
        if prev is not None and _same_rule(prev, row):
            _keep_flags(out, i, prev)
        if not _absent(row) or prev is None or prev["verdict"] == NOT_RUN:
            continue
        name = f"{key[1]} [{key[2]}]"
        if prev["verdict"] == NOT_APPLICABLE:  # by the study's design: no measurement to carry
            out.at[i, "verdict"], out.at[i, "reason"] = NOT_APPLICABLE, prev["reason"]
            log.append(f"{name}: not applicable, as in {old_name}")
            continue
        if not _same(prev.get("measure"), row["measure"]):
            out.at[i, "reason"] = f"{row['reason']}; its measure changed since {old_name}"
            log.append(f"{name}: not carried (the measure changed)")
            continue
        same_rule = _same_rule(prev, row, measure=False)
        iv = _interval(prev)
        if not same_rule and (row["form"] not in ONE_INTERVAL or iv is None):
            out.at[i, "reason"] = (
                f"{row['reason']}; its rule changed since {old_name} and its form "
                f"({row['form']}) is not decided from the stored interval: it needs its run"
            )
            log.append(f"{name}: not carried (rule changed, form {row['form']})")
            continue
        for k in MEASURED:
            out.at[i, k] = prev[k]
        verdict = prev["verdict"] if same_rule else interval_verdict(*iv, row)
        out.at[i, "verdict"] = verdict
        out.at[i, "reason"] = prev["reason"] if same_rule else ""
        note = f"measured in {old_name} (outputs not rebuilt here)"
        if not same_rule:
            note += (
                f"; re-decided under this rule from the stored interval ({prev['verdict']} before)"
            )
        out.at[i, "note"] = "; ".join(s for s in (str(row["note"] or ""), note) if s and s != "nan")
        log.append(f"{name}: carried, {prev['verdict']} -> {verdict}")
    # a row now not applicable again is dropped where another study judges its claim
    return one_verdict_per_claim(out), log
