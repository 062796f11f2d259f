"""One verdict per claim, where it is judged: a claim's "not applicable" rows are dropped
where another study of the ledger judges it (:func:`one_verdict_per_claim`)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ibrobust.claims.verdicts import NOT_APPLICABLE


def one_verdict_per_claim(df: pd.DataFrame, costs: Mapping[str, str] | None = None) -> pd.DataFrame:
    """A claim (id and setting) is listed where it is judged: its "not applicable" rows
    (a study not designed to judge it: e.g. a study trained to the limit for the protocol's
    claims, one run where the claim needs several) are dropped when another study of the
    ledger judges it or would (a verdict, or "not run": disabled, not configured). A claim
    that no study can judge keeps one row, the first, whose reason says so, names the other
    studies and, from ``costs`` (claim id -> text), what judging it would take."""
    costs = costs or {}
    na = df["verdict"] == NOT_APPLICABLE
    keep = pd.Series(True, index=df.index)
    for (cid, _), g in df.groupby(["id", "setting"], sort=False):
        g_na = g[na[g.index]]
        if g_na.empty:
            continue
        if len(g_na) < len(g):
            keep[g_na.index] = False
            continue
        keep[g_na.index[1:]] = False
        first = g_na.index[0]
        reason = str(df.at[first, "reason"])
        others = list(dict.fromkeys(g_na["study"].iloc[1:]))
        if others:
            reason += f" (not applicable in {', '.join(others)} too)"
        if cid in costs:
            reason += f"; no study here judges it: {costs[cid]}"
        df.at[first, "reason"] = reason
    return df[keep].reset_index(drop=True)
