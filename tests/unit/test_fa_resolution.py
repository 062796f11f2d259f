"""Study FA's critical radii carry their read-off resolution into the ledger's intervals
(issue 45 item 2): the radius grid's cell where a radius is interpolated on the grid, the
bisection's bracket where rule fa_refine refined it; hand-computed cases of the bracket
math (a ratio of two read-off radii, a pooled log-log slope over bracketed radii) and of the
verdict a grid too coarse for the rule's band gives (a finer measurement, not more seeds,
would decide)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from claims_fixtures import T_975_2, default_config, fa_margin_gradient, fa_scaling, fa_summary, one
from claims_fixtures import ledger as build

from ibrobust.analysis.readoff import pooled_slope_bracket
from ibrobust.claims.intervals import slope_interval
from ibrobust.claims.verdicts import HOLDS, WEAKER
from ibrobust.studies.feature_averaging import refined_runs
from ibrobust.studies.feature_averaging.measures import ratio_brackets
from ibrobust.studies.feature_averaging.scaling import scaling_table
from ibrobust.studies.feature_averaging.tables import radius_bracket

FA = ("fa", "figures/summary.csv")
FA_SCALING = ("fa", "figures/critical_radius_scaling.csv")
FA_MARGIN = ("fa", "figures/margin_gradient_summary.csv")


def _ledger(tmp_path, summary, scaling=None):
    files = {FA: summary, FA_SCALING: scaling if scaling is not None else fa_scaling(),
             FA_MARGIN: fa_margin_gradient()}  # fmt: skip
    return build(tmp_path, default_config(), files)


# ---- the bracket math ------------------------------------------------------------------------
def test_pooled_slope_bracket_by_hand():
    # x = (0, 1, 3): xc = (-4/3, -1/3, 5/3), sum xc^2 = 42/9, weights (-2/7, -1/14, 5/14)
    lo, hi = pooled_slope_bracket([0, 1, 3], [0, 0, 0], [1, 2, 3])
    assert hi == pytest.approx(5 / 14 * 3)  # y = (0, 0, 3): the positive weight's top
    assert lo == pytest.approx(-2 / 7 * 1 - 1 / 14 * 2)  # y = (1, 2, 0): -3/7
    # two groups with their own intercepts: the slope is the mean of the per-group slopes
    # (equal x), each y1 - y0 in [-1, 1] -> [-1, 1]
    assert pooled_slope_bracket([0, 1, 0, 1], [0] * 4, [1] * 4, ["a", "a", "b", "b"]) == (
        pytest.approx(-1.0),
        pytest.approx(1.0),
    )
    # exact values: the bracket is the slope itself
    x, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 4.0])
    s = slope_interval(x, y).center  # 1.5
    assert pooled_slope_bracket(x, y, y) == (pytest.approx(s), pytest.approx(s))
    with pytest.raises(ValueError, match="lo <= hi"):
        pooled_slope_bracket([0, 1], [1, 0], [0, 1])


def test_ratio_brackets_by_hand():
    # k-class 24.5 in its grid cell (24, 28], 2-class 10 refined to [9.995, 10.005]
    assert ratio_brackets([(24.0, 28.0)], [(9.995, 10.005)]) == (
        (pytest.approx(24 / 10.005), pytest.approx(28 / 9.995)),
    )
    assert ratio_brackets([(1.0, 2.0)], [(0.0, 1.0)]) == ((1.0, math.inf),)


def test_radius_bracket_is_the_grid_cell_or_the_refined_bracket():
    grid = [0.0, 8.0, 9.0, 10.0, 11.0]
    assert radius_bracket(grid, 9.6) == (9.0, 10.0)
    assert radius_bracket(grid, 10.0) == (9.0, 10.0)  # on a grid radius: the cell below
    fine = {"critical_radius_lo": 9.57, "critical_radius_hi": 9.58}
    assert radius_bracket(grid, 9.6, fine) == (9.57, 9.58)
    assert all(math.isnan(v) for v in radius_bracket(grid, math.nan))  # censored


# ---- the ledger ---------------------------------------------------------------------------------
def test_a_grid_cell_as_wide_as_the_band_asks_for_a_finer_measurement(tmp_path):
    # universal radii (10.5, 10.6, 10.4) on the grid (cells of 1 around 10, sqrt(d/k) = 10):
    # 1.05 +- 4.303 x 0.01 / sqrt 3 = [1.0252, 1.0748] (sampling), every value in the cell
    # [1.0, 1.1]: 0.05 below and above -> [0.9752, 1.1248], across the strong end 1.1; the
    # read-off part alone reaches it (1.05 + 0.05 = 1.1): more seeds cannot decide
    kw = dict(binary=(9.5, 9.5, 9.5), universal=(10.5, 10.6, 10.4))
    row = one(_ledger(tmp_path, fa_summary(refined=None, **kw)), "fa", "fa.universal_radius")
    lo, hi = 1.05 - T_975_2 * 0.01 / math.sqrt(3), 1.05 + T_975_2 * 0.01 / math.sqrt(3)
    assert (row.ci_lo, row.ci_hi) == pytest.approx((lo - 0.05, hi + 0.05))
    assert row.verdict == WEAKER
    assert "a finer measurement would decide, no number of seeds does" in row.reason
    assert "the radius grid's cell, 1 wide" in row.reason
    assert row.ci_method == "t over seeds + read-off the radius grid's cell, 1 wide"
    # the same radii refined by bisection to 0.01 (+- 0.005 = 0.0005 x sqrt(d/k)): decided
    row = one(_ledger(tmp_path, fa_summary(refined=0.01, **kw)), "fa", "fa.universal_radius")
    assert (row.ci_lo, row.ci_hi) == pytest.approx((lo - 0.0005, hi + 0.0005))
    assert row.verdict == HOLDS
    assert row.ci_method == "t over seeds + read-off per-point bisection to 0.01"


def test_kclass_ratio_carries_both_radii_brackets(tmp_path):
    # 2-class 10 on every seed (refined exactly), k-class 25 on every seed read off the grid's
    # cell (24, 28]: ratio 2.5, bracket [2.4, 2.8] on every seed: [2.4, 2.8]
    summary = fa_summary(binary=(10.0, 10.0, 10.0), multiclass=(25.0, 25.0, 25.0))
    multi = summary.setting == "multiclass"
    for end in ("refined", "lo", "hi"):
        summary.loc[multi, f"critical_radius.worst.{end}"] = math.nan
    rows = _ledger(tmp_path, summary).loc[("fa", "fa.kclass_over_binary")]
    for _, row in rows.iterrows():
        assert (row.ci_lo, row.ci_hi) == pytest.approx((2.4, 2.8))
        assert "k-class: the radius grid's cell, 4 wide" in row.ci_method


def test_scaling_slope_widens_by_the_radii_brackets(tmp_path):
    # slope -0.5 on both seeds, every radius in [r - 1, r + 1] (not refined): the
    # interval is the slope's extremes over the brackets (exact: pooled_slope_bracket)
    scaling = fa_scaling(refined=None, bracket=1.0)
    row = one(_ledger(tmp_path, fa_summary(), scaling), "fa", "fa.scaling_slope")
    sel = scaling[(scaling.key == "k") & (scaling.label == "binary")].drop_duplicates(
        ["seed", "dataset"]
    )
    lo, hi = pooled_slope_bracket(
        np.log(sel.k), np.log(sel["critical_radius.lo"]), np.log(sel["critical_radius.hi"]),
        sel.seed,
    )  # fmt: skip
    assert (row.ci_lo, row.ci_hi) == pytest.approx((lo, hi))  # zero sampling spread
    assert lo < -0.55 and hi > -0.45  # the brackets alone span the strong band
    assert row.ci_method.endswith("+ read-off the radii's brackets: the sweep grid's cells")
    assert "a finer measurement would decide" in row.reason


# ---- the refinement's plan and tables -----------------------------------------------------------
def test_refined_runs_follow_the_config():
    cfg = default_config()
    cfg["studies"]["fa"]["refine"] = {"radii": {"main": ["universal"]}, "tolerance": 0.01}
    runs = refined_runs(cfg, "fa", "main")
    assert [(r["seed"], r["radius"], r["supervision"]) for r in runs] == [
        (s, "universal", "binary") for s in cfg["studies"]["fa"]["seeds"]
    ]
    assert refined_runs(cfg, "fa", "scaling") == []
    cfg["studies"]["fa"]["refine"] = None
    assert refined_runs(cfg, "fa", "main") == []


def test_refine_config_errors_name_the_key():
    from ibrobust.errors import ConfigError
    from ibrobust.studies.feature_averaging import check

    cfg = default_config()
    st = dict(cfg["studies"]["fa"], refine={"radii": {"main": ["pgd_l1"]}, "tolerance": 0.01})
    with pytest.raises(ConfigError, match=r"studies\.fa\.refine\.radii\.main\[0\]: 'pgd_l1'"):
        check(cfg, st, "studies.fa")
    st = dict(st, scaling=None, refine={"radii": {"scaling": ["worst"]}, "tolerance": 0.01})
    with pytest.raises(ConfigError, match=r"refine\.radii\.scaling: the study has no scaling"):
        check(cfg, st, "studies.fa")


def test_scaling_table_brackets_each_radius():
    # worst case falls linearly from 1 at 0 to 0 at 2: its 50 % point 1.0 lies in the cell
    # (0.5, 1.0] of the grid (0, 0.5, 1.0, 2.0); a refined run keeps its bisected bracket
    eps = [0.0, 0.5, 1.0, 2.0]
    rows = []
    for seed in (0, 1):
        for e in eps:
            rows.append(dict(dataset="b@k=2", model="m", optimizer="gd", supervision="binary",
                             seed=seed, readout="sum", attack="worst", eps=e,
                             robust_acc=1 - e / 2))  # fmt: skip
    curves = pd.DataFrame(rows)
    fine = [dict(dataset="b@k=2", model="m", optimizer="gd", supervision="binary", seed=1,
                 radius="worst", critical_radius=0.995, critical_radius_lo=0.99,
                 critical_radius_hi=1.0)]  # fmt: skip
    table = scaling_table(curves, {"b@k=2": {"d": 4, "k": 2}}, {"k": ["b@k=2"]},
                          {"m": None}, refined=fine)  # fmt: skip
    t = table.set_index("seed")
    assert t.loc[0, "critical_radius"] == pytest.approx(1.0)
    assert (t.loc[0, "critical_radius.lo"], t.loc[0, "critical_radius.hi"]) == (0.5, 1.0)
    assert math.isnan(t.loc[0, "critical_radius.refined"])
    assert (t.loc[1, "critical_radius.lo"], t.loc[1, "critical_radius.hi"]) == (0.99, 1.0)
    assert t.loc[1, "critical_radius.refined"] == 0.995
