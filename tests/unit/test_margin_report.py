"""Study MARGIN's reported numbers on hand-made tables: separation and monotonicity of the
smoothed margin, finiteness, the attack audit (which attack found each minimal distance),
the certificate check, the robust-accuracy curves, the figures' checkpoint marks, and the
claims computed from the summary and points tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from claims_fixtures import (
    MARGIN_CHECKPOINTS,
    history_table,
    margin_flow_history,
    margin_history,
    margin_outputs,
    margin_points,
    margin_summary_outputs,
)

from ibrobust.claims.core import NotApplicable, NotRun, StudyContext, load_source
from ibrobust.studies.margin import report as rep
from ibrobust.studies.margin import tables as mr
from ibrobust.studies.margin.claims import SOURCES, claims
from ibrobust.studies.margin.plots import checkpoint_marks
from ibrobust.studies.margin.tables import robust_curves


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


def _points(rows, checkpoint="a", split="train") -> pd.DataFrame:
    """Per-point rows (margin, fab_l2, pgd_l2_upper, certified_l2) with ``distance_l2`` the
    smallest attack distance, as ibrobust.studies.margin.experiment.point_robustness reports it."""
    df = pd.DataFrame(rows, columns=["margin", "fab_l2", "pgd_l2_upper", "certified_l2"])
    df["distance_l2"] = df[list(mr.L2_ATTACKS)].min(axis=1, skipna=True)
    return df.assign(index=range(len(df)), checkpoint=checkpoint, split=split)


def test_attack_audit_counts_ties_for_both_attacks():
    nan = math.nan
    pts = pd.concat(
        [
            _points(
                [
                    (1.0, 1.0, 1.0 + 1e-12, 0.5),  # a tie (within rounding): both tightest
                    (1.0, 2.0, 1.8, 0.5),  # the PGD bound is the distance
                    (1.0, 1.5, 3.0, 0.5),  # FAB is
                    (-1.0, 0.1, 0.1, 0.0),  # misclassified: left out
                    (1.0, 0.7, nan, 0.5),  # outside the bisection sample: left out
                ]
            ),
            _points([(1.0, 0.5, 0.6, 0.1), (1.0, 0.4, 0.4, 0.1)], "final", "test"),
            _points([(1.0, 0.5, nan, 0.1)], "final", "train"),
        ]
    )
    audit = mr.attack_audit(pts).set_index(["checkpoint", "split", "attack"])
    fab, pgd = audit.loc[("a", "train", "fab_l2")], audit.loc[("a", "train", "pgd_l2_upper")]
    assert fab.points == pgd.points == 3
    assert fab.tightest == pytest.approx(2 / 3) and pgd.tightest == pytest.approx(2 / 3)
    # ratios to the distance (the smaller of the two): FAB 1, 2 / 1.8, 1; PGD 1, 1, 2
    assert (fab.ratio_median, fab.ratio_max) == pytest.approx((1.0, 2.0 / 1.8))
    assert (pgd.ratio_median, pgd.ratio_max) == pytest.approx((1.0, 2.0))
    fab, pgd = audit.loc[("final", "test", "fab_l2")], audit.loc[("final", "test", "pgd_l2_upper")]
    assert (fab.points, fab.tightest, pgd.tightest) == (2, 1.0, 0.5)
    assert (pgd.ratio_median, pgd.ratio_max) == pytest.approx((1.1, 1.2))
    # every point's distance is reached by some attack: the shares add up to at least 1
    by_group = audit[audit.points > 0].groupby(level=[0, 1])["tightest"].sum()
    assert len(by_group) == 2 and (by_group >= 1).all()
    empty = audit.loc[("final", "train", "fab_l2")]
    assert empty.points == 0 and math.isnan(empty.tightest) and math.isnan(empty.ratio_max)
    md = mr.summary_markdown(pd.DataFrame({"run": ["r"], "name": ["final"]}), {}, audit)
    assert "## Attack audit: which attack found the minimal l2 distance" in md


def test_certificate_check_on_the_smallest_distance():
    nan = math.nan
    pts = _points(
        [
            (1.0, 2.0, 2.2, 1.0),  # holds, distance / certificate 2
            (1.0, 1.0, 0.4, 0.5),  # FAB alone would hold; the PGD bound 0.4 < 0.5 does not
            (1.0, 0.5, nan, 0.5),  # on the certificate: holds (ratio 1)
            (-1.0, 0.1, 0.1, 0.5),  # misclassified: left out
            (1.0, 1.0, 1.0, nan),  # no certificate: left out
            (1.0, nan, nan, 0.5),  # no attack reached it: left out
        ]
    )
    cc = mr.certificate_check(pts)
    assert (cc["points"], cc["holding"]) == (3, 2)
    assert cc["frac_holding"] == pytest.approx(2 / 3)
    assert cc["distance_over_cert_median"] == pytest.approx(1.0)  # of 2, 0.8 and 1
    none = mr.certificate_check(pts.assign(certified_l2=nan))
    assert none["points"] == 0 and math.isnan(none["frac_holding"])


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


def test_claims_on_the_summary_and_points_of_two_runs():
    """Every MARGIN claim that reads the summary and points tables margin_figures.py writes
    computes from them, or says why it cannot (the verdicts themselves:
    tests/unit/test_claims_margin.py)."""
    runs = {}
    for seed, last in ((0, 6), (1, 8)):
        hist, cks = margin_history(margin_growth=2.0 + seed)
        d = {(c, sp): [2.0] * (4 if c == "model-1" else last) + [1.0] * (10 - (4 if c == "model-1" else last))
             for c, _ in MARGIN_CHECKPOINTS for sp in ("train", "test")}  # fmt: skip
        runs[f"r{seed}"] = (hist, cks, margin_points(d))
    summary, points = margin_outputs(runs, {"l2": [0.0, 1.0, 1.5, 2.0], "linf": [0.0, 0.1]})
    assert {"cert_frac_holding", "train_robust_l2", "test_eps_l2", "schedule"} <= set(summary)
    assert not any(c.startswith("cc_") for c in summary.columns)
    ctx = StudyContext(
        "margin", {"robustness": {"attack_points": 10, "radii": {"l2": [0.0, 1.0, 2.0]}}}
    )
    src = {"summary": summary, "points": points}
    got = {}
    for c in claims(ctx):
        if not set(c.sources) <= set(src):
            continue  # schedules.csv: tests/unit/test_claims_margin.py
        try:
            got[c.id] = c.compute({s: src[s] for s in c.sources}, ctx)
        except (NotApplicable, NotRun) as why:
            got[c.id] = f"{type(why).__name__}: {why}"
    assert got["margin.loss_below_float64"].values == (-310.0, -310.0)
    # the normalized-margin trend is judged within a decade of the table's losses (10^-10,
    # -15, -20, -120): these runs' checkpoints sit at 10^-124 and 10^-310, outside it
    assert got["margin.normalized_grows"] == "NotRun: no run with two or more distinct x values"
    assert got["margin.epochs_to_threshold"].startswith("NotRun: no checkpoint at the paper's")
    assert got["margin.smoothed_monotone"].startswith("NotApplicable: the study trains no")
    assert "margin.smoothed_monotone_sgd" not in got  # an observation, not a claim
    assert got["margin.loss_rate"].startswith("NotApplicable: the study trains no constant-step")
    assert got["margin.kkt_residual_falls"] == "NotRun: the summary has no 'kkt_residual'"
    # l2 grid top 2: the area rises by (2 - 1) / 2 / 10 for each point that moved from
    # distance 1 to 2 (2 and 4 of 10), over log10(-log10 L) log10(2.5) apart: per-run slopes
    step = math.log10(310 / 124)
    assert got["margin.robust_rises_train"].values == pytest.approx((0.1 / step, 0.2 / step))
    assert got["margin.robust_rises_test"].points == 10
    cert = got["margin.certificate"]
    assert cert.values == (1.0, 1.0) and cert.ci().n == 80 and cert.unit == "runs"
    # a run that logged a non-finite value counts as not having reached the loss
    bad = {"summary": summary.assign(all_finite=[0.0, 0.0, 1.0, 1.0])}
    m = claims(ctx)[0].compute(bad, ctx)
    assert m.values == (0.0, -310.0) and "non-finite" in m.note


LOSSES = [0.0, -4.0, -10.0, -14.0, -17.0, -20.0]  # log10 L per epoch 0..5
NORMALIZED = [-1.0, -0.1, 1e-3, 1.5e-3, 2e-3]  # epochs 0..4 (margin_history's)


def test_claims_on_the_outputs_of_both_schedules(tmp_path):
    """Every MARGIN claim computes from the tables margin_figures.py writes (run_table and
    schedules_table, not hand-added columns), the constant-step runs and schedules.csv
    included, and each file passes the ledger's column checks (the verdicts themselves:
    tests/unit/test_claims_margin.py)."""
    runs, constant, hists = {}, {}, ({}, {})
    for seed, last in ((0, 6), (1, 8)):
        # the checkpoints (epochs 2, 5) at log10 L -10 and -20: both in the models 1-4 window
        hist, cks = history_table(range(6), LOSSES, NORMALIZED[:5] + [1e-3 * (2.0 + seed)],
                                  margin_history()[0]["smoothed_normalized_margin"])  # fmt: skip
        d = {(c, sp): [2.0] * (4 if c == "model-1" else last) + [1.0] * (10 - (4 if c == "model-1" else last))
             for c, _ in MARGIN_CHECKPOINTS for sp in ("train", "test")}  # fmt: skip
        runs[f"r{seed}"] = (hist, cks, margin_points(d))
        constant[f"r{seed}"] = margin_flow_history(steps=20000, dips=(500,) * seed)
        hists[0][f"r{seed}"], hists[1][f"r{seed}"] = hist, constant[f"r{seed}"][0]
    radii = {"l2": [0.0, 1.0, 1.5, 2.0], "linf": [0.0, 0.1]}
    summary, points = margin_summary_outputs(runs, radii, constant)
    assert {"cert_frac_holding", "train_robust_l2", "test_eps_l2"} <= set(summary.columns)
    assert {"schedule", "kkt_residual", "homogeneity", *mr.RATE_COLUMNS} <= set(summary.columns)
    assert not any(c.startswith("cc_") for c in summary.columns)
    ctx = StudyContext("margin", {"robustness": {"attack_points": 10, "radii": radii}})
    src = {"summary": summary, "points": points, "schedules": mr.schedules_table(*hists)}
    for name, df in src.items():  # each file passes its source's column checks (the ledger's)
        path = tmp_path / f"{name}.csv"
        df.to_csv(path, index=False)
        load_source(path, SOURCES[name])
    got = {}
    for c in claims(ctx):
        try:
            got[c.id] = c.compute({s: src[s] for s in c.sources}, ctx)
        except NotRun:
            got[c.id] = None
    assert set(got) == {
        "margin.epochs_to_threshold", "margin.loss_below_float64", "margin.normalized_grows", "margin.smoothed_monotone",
        "margin.loss_rate", "margin.norm_rate",
        "margin.kkt_residual_falls", "margin.constant_lr_stalls", "margin.robust_rises_train",
        "margin.robust_rises_test", "margin.certificate",
    }  # fmt: skip
    assert got["margin.loss_below_float64"].values == (-20.0, -20.0)
    # epochs 2 and 5 at the table's -10 and -20 (38 and 107 epochs): the geometric mean
    ratio = math.sqrt(2 / 38 * 5 / 107)
    assert got["margin.epochs_to_threshold"].values == pytest.approx((ratio, ratio))
    # the constant-step runs: seed 1's smoothed margin dips once in its logged steps
    n_after = len(constant["r1"][0]) - 11  # logged steps after the fit at step 100
    assert got["margin.smoothed_monotone"].values == pytest.approx((0.0, 1 / n_after))
    # the fixture's rho follows the flow's law exactly (rho^L = ln t + c ln ln t): the measured
    # slope of ln rho on ln ln t is the theory's over the same window, and it is positive
    (theory,) = set(summary["norm_rate_theory"].dropna().round(12))  # one law, every run
    assert theory > 0
    assert got["margin.norm_rate"].values == pytest.approx((theory, theory))
    assert got["margin.loss_rate"].values == pytest.approx((1.0, 1.0), abs=0.005)
    assert got["margin.kkt_residual_falls"].values[0] < 0  # 0.5 -> 0.05 over the checkpoints
    # at the constant run's last epoch (20000) the loss-based runs have stopped (epoch 5, -20)
    stalls = got["margin.constant_lr_stalls"]
    assert stalls.values == pytest.approx(tuple(-20.0 - h["log10_train_loss"].iloc[-1]
                                                for h in hists[1].values()))  # fmt: skip
    # the slope of log10 margin on log10(-log10 L) between the checkpoints (-10, -20)
    lift = math.log10(20 / 10)
    assert got["margin.normalized_grows"].values == pytest.approx(
        (math.log10(2.0) / lift, math.log10(3.0) / lift)
    )
    # area over [0, 2]: 2 (4) more points of 10 at distance 2 instead of 1, each (2 - 1) / 2,
    # over the lift (per run)
    assert got["margin.robust_rises_train"].values == pytest.approx((0.1 / lift, 0.2 / lift))
    assert got["margin.robust_rises_test"].points == 10
    cert = got["margin.certificate"]
    assert cert.values == (1.0, 1.0) and cert.ci().n == 80 and cert.unit == "runs"
    # a run that logged a non-finite value counts as not having reached the loss
    bad = {"summary": summary.assign(all_finite=[0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])}
    m = claims(ctx)[0].compute(bad, ctx)
    assert m.values == (0.0, -20.0) and "non-finite" in m.note


def test_checkpoints_sharing_an_epoch_share_one_mark():
    checkpoints = pd.DataFrame(
        {"name": ["init", "model 1", "model 4", "final"], "epoch": [0, 119, 2311, 2311]}
    )
    # epoch 0 (init) is left off the log axis; model 4 and final become one mark in
    # model 4's colour
    assert checkpoint_marks(checkpoints) == [
        (119, "model 1", "model 1"),
        (2311, "model 4 = final", "model 4"),
    ]


def test_report_labels_runs_and_selects_the_first():
    runs = [{"dataset": "d", "model": "m", "seed": 0}, {"dataset": "d", "model": "m", "seed": 1}]
    assert rep.run_label(runs[1]) == "d/m/seed1"
    points = pd.DataFrame({"dataset": ["d", "d"], "model": ["m", "m"], "seed": [0, 1],
                           "checkpoint": ["final", "model-1"]})  # fmt: skip
    one = rep.label_checkpoints(points.copy(), runs[:1])
    assert list(one.checkpoint) == ["final", "model-1"]  # one run: unchanged
    two = rep.label_checkpoints(points.copy(), runs)
    assert list(two.checkpoint) == ["d/m/seed0:final", "d/m/seed1:model-1"]
    assert list(rep.first_run(points, runs[1]).checkpoint) == ["model-1"]


def test_report_arm_line_and_metrics():
    note = {"training": {"min_log10_loss": -12.345, "all_finite": True},
            "after the data is fit": {"decreasing": 2, "epochs_after": 40,
                                      "frac_decreasing": 0.05}}  # fmt: skip
    table = pd.DataFrame({"kkt_residual": [0.5, 0.01234]})
    assert rep.arm_line("d/m/seed0", "constant", table, note) == (
        "d/m/seed0 constant: log10 L -12.35 (finite True); smoothed margin decreasing in 2 of "
        "40 rows after fit; KKT residual at the end 0.0123"
    )
    assert rep.arm_metrics("constant", note) == {
        "constant.min_log10_loss": -12.345,
        "constant.frac_decreasing": 0.05,
    }
