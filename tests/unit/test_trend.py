"""Trends over a scale ladder, on a hand-made ledger: grows, shrinks, steady and unknown."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ibrobust.ledger.trend import GROWS, SHRINKS, STEADY, UNKNOWN, trend_markdown, trends
from ibrobust.studies.expansion import Rung

RUNGS = {
    "margin@n_train=20": Rung("margin", "n_train", 20),
    "margin@n_train=200": Rung("margin", "n_train", 200),
    "margin@n_train=1000": Rung("margin", "n_train", 1000),
}


def row(study, cid, mean, lo, hi, verdict="holds", setting="s"):
    return dict(study=study, id=cid, setting=setting, ours_mean=mean, ci_lo=lo, ci_hi=hi,
                verdict=verdict)  # fmt: skip


def ledger(rows):
    return pd.DataFrame(rows)


def test_grows_shrinks_steady_and_unknown_by_hand():
    rows = [
        # a: 1.0 [0.9, 1.1] -> 2.0 [1.8, 2.2]: difference 1.0, half-widths sqrt(0.2^2 + 0.1^2)
        row("margin@n_train=1000", "a", 2.0, 1.8, 2.2),
        row("margin@n_train=20", "a", 1.0, 0.9, 1.1),
        row("margin@n_train=200", "a", 1.5, 1.3, 1.7, verdict="holds weaker"),
        row("margin@n_train=20", "b", 1.0, 0.5, 1.5),
        row("margin@n_train=1000", "b", 0.0, -0.2, 0.2, verdict="does not hold"),
        row("margin@n_train=20", "c", 1.0, 0.0, 2.0),
        row("margin@n_train=1000", "c", 1.5, 1.0, 2.0),
        row("margin@n_train=20", "d", 1.0, math.nan, math.nan, verdict="inconclusive"),
        row("margin@n_train=1000", "d", 1.5, 1.0, 2.0),
        row("other", "a", 9.0, 8.0, 10.0),  # not a rung: ignored
    ]
    t = trends(ledger(rows), RUNGS).set_index("id")
    a = t.loc["a"]
    assert a.rungs == "20 -> 200 -> 1000" and a.verdicts == "holds -> holds weaker -> holds"
    assert a.difference == pytest.approx(1.0)
    assert a.difference_lo == pytest.approx(1.0 - math.hypot(0.2, 0.1))
    assert a.trend == GROWS and not a.verdict_stable
    assert t.loc["b"].trend == SHRINKS
    assert t.loc["c"].trend == STEADY and t.loc["c"].verdict_stable
    assert t.loc["d"].trend == UNKNOWN
    assert len(t) == 4
    md = trend_markdown(t.reset_index())
    assert "## margin: n_train = 20 -> 200 -> 1000" in md and "grows (+1 [" in md


def test_rows_are_matched_by_order_within_a_rung_not_by_setting_text():
    rows = [
        row("margin@n_train=20", "a", 1.0, 0.9, 1.1, setting="data@n_train=20, x"),
        row("margin@n_train=20", "a", 5.0, 4.9, 5.1, setting="data@n_train=20, y"),
        row("margin@n_train=1000", "a", 1.0, 0.9, 1.1, setting="data@n_train=1000, x"),
        row("margin@n_train=1000", "a", 3.0, 2.9, 3.1, setting="data@n_train=1000, y"),
    ]
    t = trends(ledger(rows), RUNGS)
    assert list(t.setting) == ["data@n_train=20, x", "data@n_train=20, y"]
    assert list(t.trend) == [STEADY, SHRINKS]
