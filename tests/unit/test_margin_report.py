"""Study MARGIN's reported numbers on hand-made tables: separation and monotonicity of the
smoothed margin, finiteness, the FAB-vs-bounds cross-check, the robust-accuracy curves, and
the claims computed from a summary."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ibrobust.claims.core import StudyContext
from ibrobust.claims.margin import claims
from ibrobust.experiments import margin_report as mr
from ibrobust.experiments.margin_report import robust_curves


def _history():
    return pd.DataFrame(
        {
            "epoch": [0, 1, 2, 3, 4, 5],
            "train_acc": [0.5, 0.9, 1.0, 1.0, 1.0, 1.0],
            "smoothed_normalized_margin": [-1.0, -0.5, 0.1, 0.3, 0.25, 0.4],
            "log10_train_loss": [0.3, -1.0, -2.0, -3.0, -4.0, -5.0],
            "q_min": [-1.0, -0.1, 0.2, 0.4, 0.5, 0.6],
            "rho": [1.0] * 6,
            "normalized_margin": [-1.0, -0.1, 0.2, 0.4, 0.5, 0.6],
        }
    )


def test_separation_counts_decreases_after_the_fit_epoch():
    s = mr.separation(_history())
    # fit from epoch 2: steps 0.1->0.3 (up), 0.3->0.25 (down 0.05), 0.25->0.4 (up)
    assert s["fit_epoch"] == 2 and s["epochs_after"] == 3 and s["decreasing"] == 1
    assert s["frac_decreasing"] == pytest.approx(1 / 3)
    assert s["largest_drop"] == pytest.approx(0.05)
    assert s["largest_rel_drop"] == pytest.approx(0.05 / 0.3)


def test_separation_without_fit_and_finiteness():
    h = _history().assign(train_acc=0.5)
    assert math.isnan(mr.separation(h)["frac_decreasing"])
    assert mr.all_finite(_history())
    assert not mr.all_finite(_history().assign(q_min=[0, 1, 2, math.inf, 4, 5]))


def test_cross_check_fractions():
    pts = pd.DataFrame(
        {
            "margin": [1.0, 1.0, 1.0, -1.0],
            "fab_l2": [1.0, 2.0, 0.5, 0.0],
            "pgd_l2_upper": [1.5, 1.8, math.nan, 0.0],
            "certified_l2": [0.5, 0.5, 0.1, 0.0],
        }
    )
    cc = mr.cross_check(pts)
    assert cc["pairs"] == 2  # the NaN bound and the misclassified point are left out
    assert cc["fab_below_pgd"] == 0.5 and cc["fab_above_cert"] == 1.0
    assert cc["fab_over_pgd_max"] == pytest.approx(2.0 / 1.8)


def test_robust_curves_use_the_distance_and_skip_unattacked_norms():
    pts = pd.DataFrame(
        {
            "checkpoint": ["a"] * 4,
            "split": ["train"] * 4,
            "distance_l2": [0.0, 0.5, 1.0, 2.0],
            "distance_linf": [math.nan] * 4,
        }
    )
    c = robust_curves(pts, {"l2": [0.0, 0.75, 1.5], "linf": [0.0, 0.1]})
    assert set(c["norm"]) == {"l2"}
    assert c["robust_acc"].tolist() == [0.75, 0.5, 0.25]  # fraction with distance > eps


def test_claims_on_a_summary():
    rows = []
    for name, epoch, nm, tr in (("model-1", 10, 1e-3, 0.4), ("final", 50, 3e-3, 0.5)):
        rows.append(dict(run="r", name=name, epoch=epoch, normalized_margin=nm,
                         train_robust_l2=tr, test_robust_l2=0.3, sep_frac_decreasing=0.02,
                         cc_fab_below_pgd=0.9, cc_fab_above_cert=1.0, min_log10_loss=-310.0,
                         all_finite=1.0))  # fmt: skip
    src = {"summary": pd.DataFrame(rows)}
    got = {c.id: c.compute(src, StudyContext("margin", {})) for c in claims(StudyContext("m", {}))}
    assert got["margin.loss_below_1e-300"].values == (-310.0,)
    assert got["margin.smoothed_monotone"].values == (0.02,)
    assert got["margin.normalized_grows"].values == (pytest.approx(3.0),)
    assert got["margin.robust_rises_train"].values == (pytest.approx(0.1),)
    assert got["margin.robust_rises_test"].values == (0.0,)
    assert got["margin.fab_between_bounds"].values == (0.9,)
    bad = {"summary": src["summary"].assign(all_finite=0.0)}
    assert claims(StudyContext("m", {}))[0].compute(bad, None).values == (0.0,)
