"""The claims ledger of Study MARGIN (Lyu & Li, ICLR 2020) on hand-made outputs in the
workflow's shapes (summary.csv, points.csv, schedules.csv): each claim's verdicts on
hand-computed intervals in a study of three runs (margin_small), the not-applicable paths
(a study of one run, one that stops at log10 L = -120, one without constant-step runs, one
not at the paper's scale), the not-run paths and malformed outputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from claims_fixtures import (
    CONSTANT,
    MARGIN_CHECKPOINTS,
    T_975_2,
    default_config,
    history_table,
    ledger,
    margin_history,
    margin_outputs,
    margin_points,
    margin_schedules,
    one,
    t_ends,
    verdicts,
)

from ibrobust.claims import intervals as iv
from ibrobust.claims.core import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_RUN,
    WEAKER,
    StudyContext,
    SummaryError,
)

MARGIN = ("margin", "figures/summary.csv")
MARGIN_POINTS = ("margin", "figures/points.csv")
SMALL = "margin_small"  # config.yaml: 3 seeds, full batch, stops at log10 L = -320
RADII = default_config()["studies"]["margin"]["robustness"]["radii"]  # l2 top: 4.0
STEP = math.log10(2.5)  # log10(-log10 L) between the fixture's two checkpoints (0.4 L, L)
NO_FLOW = "the study trains no constant-step run (training.flow unset)"


def files_of(study: str, runs, schedules: pd.DataFrame | None = None) -> dict:
    """The study's outputs from its runs ((run, tables) pairs, see :func:`run`)."""
    summary, points = margin_outputs(dict(runs), RADII)
    out = {(study, MARGIN[1]): summary, (study, MARGIN_POINTS[1]): points}
    if schedules is not None:
        out[(study, "figures/schedules.csv")] = schedules
    return out


def run(
    seed: int,
    robust_first: int = 4,
    robust_last: int = 6,
    n: int = 10,
    dataset: str = "margin_mnist_small",
    extra: dict | None = None,
    history: tuple | None = None,
    **kw,
) -> tuple[str, tuple]:
    """One run's tables: of its ``n`` train (and test) points ``robust_first`` /
    ``robust_last`` lie at distance 2 (the others at 1) at the first / last checkpoint;
    ``history``: (history, checkpoints) tables (default :func:`margin_history` of ``kw``);
    ``extra``: the summary columns beyond margin_summary.py's (schedule, rates, KKT)."""
    hist, cks = history or margin_history(**kw)
    names = list(cks["name"])
    first, last = names[0], names[-1]

    def dists(k):
        return [2.0] * k + [1.0] * (n - k)

    pts = {(c, s): dists(k) for c, k in ((first, robust_first), (last, robust_last))
           for s in ("train", "test")}  # fmt: skip
    name = f"{dataset}/margin_cnn_small/seed{seed}"
    if extra and extra.get("schedule") == CONSTANT:
        name += "/constant"
    return name, (hist, cks, margin_points(pts), extra or {})


def small(**flow) -> dict:
    """config.yaml with margin_small enabled, its ``training.flow`` the one given (none when
    not given: config.yaml's own constant-step arm is dropped)."""
    cfg = default_config(margin_small=True)
    cfg["studies"][SMALL]["training"].pop("flow", None)
    if flow:
        cfg["studies"][SMALL]["training"]["flow"] = flow
    return cfg


# ---- a study of one run that stops at -120 (config.yaml's margin) ---------------------------
def test_margin_one_run_study_judges_only_what_one_run_can(tmp_path):
    # known from the config (one seed) before any output exists: not "not run"
    bare = ledger(tmp_path / "bare", default_config(margin=True), {})
    for id_ in ("margin.normalized_grows", "margin.kkt_residual_falls", "margin.robust_rises_test"):
        assert one(bare, "margin", id_).verdict == NOT_APPLICABLE, id_
    files = files_of("margin", [run(0, dataset="margin_mnist")])
    df = ledger(tmp_path, default_config(margin=True), files)
    reasons = {id_: one(df, "margin", id_).reason for id_ in (
        "margin.loss_below_float64", "margin.normalized_grows", "margin.epochs_to_threshold",
        "margin.smoothed_monotone", "margin.loss_rate",
        "margin.norm_rate", "margin.kkt_residual_falls", "margin.constant_lr_stalls",
        "margin.robust_rises_train", "margin.robust_rises_test")}  # fmt: skip
    assert {id_: one(df, "margin", id_).verdict for id_ in reasons} == dict.fromkeys(
        reasons, NOT_APPLICABLE
    )
    one_run = (
        "the study trains 1 loss-based run: a trend or a rate judged on one run has no interval "
        "over runs (judged in a study with several seeds, e.g. margin_small)"
    )
    assert reasons == {
        "margin.loss_below_float64": "the study stops at log10 L = -120 "
        "(training.stop_log10_loss) by configuration, before -308",
        "margin.normalized_grows": one_run,
        "margin.epochs_to_threshold": "epoch counts depend on the SGD steps per epoch: the "
        "paper's 600 (60,000 images, batch 100) against this study's 1000 images, batch 100; "
        "judged with the paper-scale overlay configs/margin_paper.yaml",
        "margin.smoothed_monotone": "the study trains no constant run (training.flow unset)",
        "margin.loss_rate": NO_FLOW,
        "margin.norm_rate": "the study trains no constant run (training.flow unset)",
        "margin.kkt_residual_falls": one_run,
        "margin.constant_lr_stalls": NO_FLOW,
        # a trend along training on one run: an interval over its points is blind to the
        # run-to-run variance (issue 45: the 1,000-image study's one-run "does not hold")
        "margin.robust_rises_train": one_run,
        "margin.robust_rises_test": one_run,
    }
    # the certificate: 40 of 40 pairs hold, Wilson's lower end 40 / (40 + z^2) = 0.912
    row = one(df, "margin", "margin.certificate")
    assert row.verdict == INCONCLUSIVE and row.ci_lo == pytest.approx(40 / (40 + 1.959964**2))
    # the same study with the default config (not enabled): every claim is not run
    df = ledger(tmp_path / "off", default_config(), files)
    assert set(df.loc["margin"].verdict) == {NOT_RUN}
    assert set(df.loc["margin"].reason) == {"study disabled (enabled: false)"}


def test_stops_before_reads_the_studys_stopping_loss():
    from ibrobust.studies.margin.measures import stops_before

    def why(ctx: StudyContext) -> str | None:
        return stops_before(ctx, -308.0)

    assert why(StudyContext("m", {"training": {"stop_log10_loss": -120.0}})).startswith(
        "the study stops at log10 L = -120"
    )
    assert why(StudyContext("m", {"training": {"stop_log10_loss": -320.0}})) is None
    assert why(StudyContext("m", {"training": {"stop_log10_loss": None}})) is None  # no stop


# ---- three runs (margin_small) -------------------------------------------------------------------
@pytest.mark.parametrize(
    "ends, verdict",
    [
        ((-400.0, -410.0, -390.0), HOLDS),  # [-424.8, -375.2] <= -308
        ((-300.0, -310.0, -290.0), WEAKER),  # [-324.8, -275.2]: straddles -308, under -120
        ((-150.0, -100.0, -200.0), INCONCLUSIVE),  # -150 +- 124 straddles -120
        ((-50.0, -60.0, -40.0), FAILS),
    ],
)
def test_margin_loss_below_float64(tmp_path, ends, verdict):
    runs = [run(s, log10_loss_end=e) for s, e in enumerate(ends)]
    row = one(ledger(tmp_path, small(), files_of(SMALL, runs)), SMALL, "margin.loss_below_float64")
    assert row.verdict == verdict and (row.n, row.unit) == (3, "runs")
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(ends, T_975_2))
    assert (row.strong_hi, row.weak_hi) == (-308.0, -120.0)


def test_margin_loss_of_a_run_with_a_non_finite_value_counts_as_zero(tmp_path):
    files = files_of(SMALL, [run(s, log10_loss_end=-400.0) for s in range(3)])
    summary = files[(SMALL, MARGIN[1])]
    summary.loc[summary.run.str.endswith("seed2"), "all_finite"] = 0.0
    row = one(ledger(tmp_path, small(), files), SMALL, "margin.loss_below_float64")
    assert row.note == "a run logged a non-finite value (counted as 0)"
    assert row.ours_mean == pytest.approx(-800 / 3) and row.verdict == INCONCLUSIVE
    # leaving the failed run out, the two left hold: the verdict is fragile
    assert row.fragile is True
    assert row.fragile_reason == "without margin_mnist_small/margin_cnn_small/seed2: holds"


TABLE_LOSSES = (-10.0, -120.0)  # two of the table's loss thresholds (models 1 and 4)
TABLE_STEP = math.log10(12.0)  # log10(-log10 L) from 10^-10 to 10^-120


def table_run(i: int, slope: float) -> tuple[str, tuple]:
    """A run with checkpoints at log10 L = -10 and -120 (models 1 and 4 of the table) whose
    normalized margin grows as (-log10 L)^slope between them, and a last checkpoint at
    log10 L = -400 (outside every table threshold's decade) with a margin of 1, far off
    that trend."""
    nm = [-1.0, 1e-5, 1e-4, 1e-4 * 12.0**slope, 1.0]
    hist, cks = history_table(range(5), [0.0, -5.0, *TABLE_LOSSES, -400.0], nm,
                              [-1.0, 1e-5, 1e-4, 2e-4, 3e-4],
                              checkpoints=(("model-1", 2), ("model-4", 3), ("final", 4)))  # fmt: skip
    return run(i, history=(hist, cks))


@pytest.mark.parametrize(
    "slopes, verdict",
    [
        ((0.75, 0.81, 0.87), HOLDS),  # 0.81 +- 0.149 = [0.661, 0.959] in the table's [0.48, 1.14]
        ((1.3, 1.4, 1.5), WEAKER),  # [1.152, 1.648]: growing, faster than the table
        ((-0.2, 0.3, 0.5), INCONCLUSIVE),  # 0.2 +- 0.895 straddles 0
        ((0.0, 0.0, 0.0), FAILS),  # a flat margin: [0, 0] is not > 0 (strict)
        ((-0.5, -0.6, -0.4), FAILS),
    ],
)
def test_margin_normalized_grows_on_the_pooled_slope(tmp_path, slopes, verdict):
    """Judged on the checkpoints within a decade of the table's loss thresholds (10^-10,
    -15, -20, -120): each run's at -10 and -120, whose normalized margin grows 12^s-fold
    (log10(-log10 L) log10 12 apart: a log-log slope s); its checkpoint at -400 (margin 1)
    is outside the window and left out, else it would dominate the fit. With two
    checkpoints per run and an intercept per run, the pooled slope is the mean of the s and
    its interval (6 pairs, 6 - 3 - 1 = 2 df) is the t interval of the three slopes: SSR =
    2 a^2 sum (s - mean)^2 over Sxx = 6 a^2 (a = half the step), SE = sd(s) / sqrt(3)."""
    runs = [table_run(i, s) for i, s in enumerate(slopes)]
    row = one(ledger(tmp_path, small(), files_of(SMALL, runs)), SMALL, "margin.normalized_grows")
    assert row.verdict == verdict
    assert (row.ours_mean, row.ci_lo, row.ci_hi) == pytest.approx(
        (np.mean(slopes), *t_ends(slopes, T_975_2)), abs=1e-9
    )
    assert (row.n, row.unit) == (6, "(checkpoint, run) pairs")  # 3 runs x 2, not x 3
    assert row.ci_method == "t of the pooled OLS slope, an intercept per group"
    assert (row.strong_lo, row.strong_hi, row.weak_lo, row.weak_hi) == (0.48, 1.14, 0.0, math.inf)


def test_margin_normalized_grows_needs_checkpoints_at_the_tables_losses(tmp_path):
    """The fixture's default runs have checkpoints at log10 L = -160 and -400 only: none
    within a decade of the table's thresholds, so no run has a slope in the window."""
    runs = [run(i, log10_loss_end=-400.0, margin_growth=3.0) for i in range(3)]
    row = one(ledger(tmp_path, small(), files_of(SMALL, runs)), SMALL, "margin.normalized_grows")
    assert (row.verdict, row.reason) == (NOT_RUN, "no run with two or more distinct x values")


def test_margin_kkt_residual_falls(tmp_path):
    """The KKT residual 1e-2 at the first checkpoint, 1e-2 x 2.5^k at the last: slope k."""

    def runs(ks):
        return [run(i, log10_loss_end=-400.0, extra={"kkt_residual": [1e-2, 1e-2 * 2.5**k]})
                for i, k in enumerate(ks)]  # fmt: skip

    df = ledger(tmp_path, small(), files_of(SMALL, runs((-0.5, -0.6, -0.4))))
    row = one(df, SMALL, "margin.kkt_residual_falls")
    assert row.verdict == HOLDS  # [-0.748, -0.252] < 0
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((-0.5, -0.6, -0.4), T_975_2))
    # leaving a run out refits on two runs' four points (1 df, t(1) = 12.7): SE 0.1 or 0.05,
    # half-widths 1.27 or 0.64 around -0.5 or -0.55 / -0.45: each straddles 0
    assert row.fragile is True
    assert row.fragile_reason == "; ".join(
        f"without run margin_mnist_small/margin_cnn_small/seed{s}: inconclusive" for s in range(3)
    )
    df = ledger(tmp_path, small(), files_of(SMALL, runs((0.5, 0.6, 0.4))))
    assert verdicts(df, SMALL, "margin.kkt_residual_falls") == [FAILS]
    # no residual recorded (NaN on every row): not run
    df = ledger(tmp_path, small(), files_of(SMALL, [run(i) for i in range(3)]))
    row = one(df, SMALL, "margin.kkt_residual_falls")
    assert (row.verdict, row.reason) == (NOT_RUN, "the summary has no 'kkt_residual'")


# the smoothed margin after the fit (epochs 2..5): 0, 1 or 2 decreases of 3
RISING = [-1.0, -0.5, 1e-3, 1.5e-3, 2e-3, 3e-3]
ONE_DIP = [-1.0, -0.5, 1e-3, 1.5e-3, 1.4e-3, 3e-3]
TWO_DIPS = [-1.0, -0.5, 1e-3, 0.9e-3, 0.8e-3, 3e-3]


@pytest.mark.parametrize(
    "smoothed",
    [(RISING, RISING, RISING), (ONE_DIP, ONE_DIP, ONE_DIP), (TWO_DIPS, TWO_DIPS, TWO_DIPS)],
)
def test_the_sgd_schedules_monotonicity_is_an_observation_not_a_claim(tmp_path, smoothed):
    """The sources state the smoothed margin's monotonicity for gradient flow only: whether
    the loss-based SGD schedule keeps it is the project's question, reported in the study's
    summary (sep_frac_decreasing of the loss-based runs), with no ledger row."""
    runs = [run(i, smoothed=sm) for i, sm in enumerate(smoothed)]
    files = files_of(SMALL, runs)
    df = ledger(tmp_path, small(), files)
    assert "margin.smoothed_monotone_sgd" not in set(df.reset_index().id)
    summary = files[(SMALL, "figures/summary.csv")]
    per_run = summary[summary.schedule == "loss_based"].groupby("run").sep_frac_decreasing.first()
    assert list(per_run) == pytest.approx([sum(np.diff(sm[2:]) < 0) / 3 for sm in smoothed])
    # the flow's own claim needs constant-step runs: margin_small has none
    row = one(df, SMALL, "margin.smoothed_monotone")
    assert (row.verdict, row.reason) == (
        NOT_APPLICABLE,
        NO_FLOW.replace("constant-step", "constant"),
    )


def flow_runs(frac_dip: bool = False, loss=(1.02, 1.0, 0.98), norm=(0.5, 0.6, 0.4)) -> list:
    """Three loss-based runs and three constant-step runs (one per seed). A constant run's
    smoothed margin rises after the fit for 20 logged epochs, with one decrease when
    ``frac_dip`` (1/20 = 0.05); its loss and norm rates over the theory's: ``loss`` and
    ``norm`` (theory -1 and 0.5)."""
    out = [run(s, log10_loss_end=-400.0) for s in range(3)]
    sm = np.concatenate([[-1.0, -0.5], np.linspace(1e-3, 3e-3, 21)])
    if frac_dip:
        sm[10] = sm[9] - 1e-5
    hist, cks = history_table(range(23), np.linspace(0.0, -50.0, 23), sm, sm,
                              checkpoints=(("model-1", 2), ("final", 22)))  # fmt: skip
    for s in range(3):
        extra = {"schedule": CONSTANT, "loss_rate_slope": -loss[s], "loss_rate_theory": -1.0,
                 "norm_rate_slope": 0.5 * norm[s], "norm_rate_theory": 0.5}  # fmt: skip
        out.append(run(s, extra=extra, history=(hist, cks)))
    return out


def test_margin_flow_claims_on_constant_step_runs(tmp_path):
    stalls = margin_schedules({f"seed{s}": (lb, c) for s, (lb, c) in
                               enumerate(((-150, -2.0), (-160, -2.5), (-140, -1.5)))})  # fmt: skip
    files = files_of(SMALL, flow_runs(), stalls)
    df = ledger(tmp_path, small(lr=1e-3), files)
    # the constant runs' smoothed margin never falls: (0, 0, 0) <= 0
    row = one(df, SMALL, "margin.smoothed_monotone")
    assert row.verdict == HOLDS and (row.n, row.unit) == (3, "runs")
    # loss rate / theory (1.02, 1.0, 0.98): [0.950, 1.050] in [0.9, 1.1]
    row = one(df, SMALL, "margin.loss_rate")
    assert row.verdict == HOLDS and row.note == "theory -1.000, -1.000, -1.000"
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((1.02, 1.0, 0.98), T_975_2))
    # the norm's slope on ln ln t (0.25, 0.3, 0.2): [0.126, 0.374] > 0, growing (Theta: the
    # direction only, whatever the theory's 0.5)
    row = one(df, SMALL, "margin.norm_rate")
    assert row.verdict == HOLDS and row.form == "asymptotic"
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0.25, 0.3, 0.2), T_975_2))
    # the loss-based run ends (-148, -157.5, -138.5) below the constant run
    row = one(df, SMALL, "margin.constant_lr_stalls")
    assert row.verdict == HOLDS
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((-148, -157.5, -138.5), T_975_2))
    # the loss-based claims read the loss-based runs only: 3 runs, not 6 (the robust area's
    # slope: their 3 x 2 (checkpoint, run) pairs, not 6 x 2)
    assert one(df, SMALL, "margin.loss_below_float64").n == 3
    row = one(df, SMALL, "margin.robust_rises_train")
    assert (row.n, row.unit) == (6, "(checkpoint, run) pairs")
    # one decrease in 20 epochs on each constant run: 0.05, under the weak 0.1
    df = ledger(tmp_path, small(lr=1e-3), files_of(SMALL, flow_runs(frac_dip=True), stalls))
    row = one(df, SMALL, "margin.smoothed_monotone")
    assert row.verdict == WEAKER and row.ours_mean == pytest.approx(0.05)


def test_margin_flow_claims_not_run_or_not_applicable(tmp_path):
    # training.flow set but no schedules.csv built: the stall claim is not run
    df = ledger(tmp_path, small(lr=1e-3), files_of(SMALL, flow_runs()))
    row = one(df, SMALL, "margin.constant_lr_stalls")
    assert row.verdict == NOT_RUN and "figures/schedules.csv is not built here" in row.reason
    # one constant run: its rates have no interval over runs
    runs = flow_runs()[:4]
    df = ledger(tmp_path, small(lr=1e-3), files_of(SMALL, runs))
    row = one(df, SMALL, "margin.loss_rate")
    assert row.verdict == NOT_APPLICABLE and row.reason.startswith(
        "the study trains 1 constant-step run:"
    )
    # no flow configured: not applicable even when a schedules.csv is lying around
    stalls = margin_schedules({"seed0": (-150.0, -2.0), "seed1": (-160.0, -2.5)})
    df = ledger(tmp_path, small(), files_of(SMALL, flow_runs()[:3], stalls))
    row = one(df, SMALL, "margin.constant_lr_stalls")
    assert (row.verdict, row.reason) == (NOT_APPLICABLE, NO_FLOW)


@pytest.mark.parametrize(
    "scale, verdict",
    [((1.0, 1.02, 0.98), HOLDS), ((1.5, 1.6, 1.4), WEAKER), ((3.0, 3.2, 2.8), FAILS)],
)
def test_margin_epochs_to_threshold_at_paper_scale(tmp_path, scale, verdict):
    """A run reaching the table's thresholds (10^-10, -15, -20, -120) at ``scale`` x the
    table's epochs (38, 75, 107, 935, rounded to whole epochs); judged only at the paper's
    600 SGD steps per epoch (60,000 images, batch 100)."""
    paper = (38, 75, 107, 935)
    runs, ratios = [], []
    for s, r in enumerate(scale):
        epochs = [0, 1, *(round(p * r) for p in paper), round(1000 * r)]
        sm = [-1.0, -0.5, 1e-4, 2e-4, 3e-4, 4e-4, 5e-4]
        names = [(f"model-{i + 1}", e) for i, e in enumerate(epochs[2:6])] + [("final", epochs[6])]
        hist = history_table(epochs, [0, -5, -10, -15, -20, -120, -130], sm, sm, names)
        runs.append(run(s, history=hist))
        # the geometric mean over the four thresholds of our epochs / the table's
        ratios.append(math.prod(round(p * r) / p for p in paper) ** (1 / 4))
    cfg = small()
    cfg["datasets"]["margin_mnist_small"]["n_train"] = 60000
    cfg["studies"][SMALL]["training"]["batch_size"] = 100
    row = one(ledger(tmp_path, cfg, files_of(SMALL, runs)), SMALL, "margin.epochs_to_threshold")
    assert row.verdict == verdict
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(ratios, T_975_2))
    assert (row.n, row.unit) == (3, "runs")
    # margin_small as configured (20 images, full batch): not applicable
    row = one(ledger(tmp_path, small(), files_of(SMALL, runs)), SMALL, "margin.epochs_to_threshold")
    assert row.verdict == NOT_APPLICABLE and "this study's 20 images, batch None" in row.reason


def test_margin_epochs_to_threshold_is_a_geometric_mean(tmp_path):
    """A run twice as slow to 10^-10 (75 epochs against the table's 38), about as fast to
    10^-15 (76 / 75) and faster to 10^-20 and 10^-120 (77 / 107 = 0.720, 654 / 935 = 0.699):
    the four ratios' product is (75 / 38)(76 / 75)(77 / 107)(654 / 935) = 2 x 50358 / 100045
    = 1.0067, their geometric mean 1.0067^(1/4) = 1.0017: inside [0.9, 1.1], holds. Their
    arithmetic mean, (1.974 + 1.013 + 0.720 + 0.699) / 4 = 1.1015, is past 1.1 (a ratio of
    2 and one of 1/2 would average 1.25 in it). Three identical runs: [1.0017, 1.0017]."""
    epochs = [0, 1, 75, 76, 77, 654, 700]
    sm = [-1.0, -0.5, 1e-4, 2e-4, 3e-4, 4e-4, 5e-4]
    names = [("model-1", 75), ("model-2", 76), ("model-3", 77), ("model-4", 654), ("final", 700)]
    hist = history_table(epochs, [0, -5, -10, -15, -20, -120, -130], sm, sm, names)
    cfg = small()
    cfg["datasets"]["margin_mnist_small"]["n_train"] = 60000
    cfg["studies"][SMALL]["training"]["batch_size"] = 100
    files = files_of(SMALL, [run(s, history=hist) for s in range(3)])
    row = one(ledger(tmp_path, cfg, files), SMALL, "margin.epochs_to_threshold")
    geometric = (2 * 77 * 654 / (107 * 935)) ** (1 / 4)
    assert geometric == pytest.approx(1.0017, abs=1e-4)
    assert (row.ours_mean, row.ci_lo, row.ci_hi) == pytest.approx((geometric,) * 3)
    assert row.verdict == HOLDS
    assert np.mean([75 / 38, 76 / 75, 77 / 107, 654 / 935]) > 1.1  # the arithmetic mean


@pytest.mark.parametrize(
    "moves, verdict",
    [
        # slopes (0.05, 0.075, 0.05) / STEP = (0.126, 0.188, 0.126): [0.056, 0.237] > 0
        (((4, 6), (4, 7), (4, 6)), HOLDS),
        (((4, 6), (4, 3), (4, 5)), INCONCLUSIVE),  # (0.05, -0.025, 0.025) / STEP straddles 0
        (((4, 4), (4, 4), (4, 4)), FAILS),  # no point moved: [0, 0] is not > 0 (strict)
        (((6, 4), (7, 4), (6, 4)), FAILS),
    ],
)
def test_margin_robust_area_over_runs(tmp_path, moves, verdict):
    """Per run and checkpoint the area under its robust-accuracy curve over [0, 4], the
    mean over its 10 points of min(R, 4) / 4 (0.25 + 0.025 x the points at distance 2), and
    its slope on log10(-log10 L) over the two checkpoints, STEP = log10(2.5) apart: 0.025
    (b - a) / STEP for a run whose points at distance 2 go from a to b. Pooled over the
    runs with an intercept each (two checkpoints per run: 6 - 3 - 1 = 2 df), the slope is
    the mean of the runs' and its interval the t interval of the three (SE = sd / sqrt 3)."""
    runs = [run(s, a, b) for s, (a, b) in enumerate(moves)]
    df = ledger(tmp_path, small(), files_of(SMALL, runs))
    values = [0.025 * (b - a) / STEP for a, b in moves]
    for split in ("train", "test"):
        row = one(df, SMALL, f"margin.robust_rises_{split}")
        assert row.verdict == verdict
        assert (row.ours_mean, row.ci_lo, row.ci_hi) == pytest.approx(
            (np.mean(values), *t_ends(values, T_975_2)), abs=1e-9
        )
        assert (row.n, row.unit, row.points) == (6, "(checkpoint, run) pairs", 10)
        assert row.ci_method == "t of the pooled OLS slope, an intercept per group"


@pytest.mark.parametrize(
    "below, verdict", [(0, HOLDS), (4, WEAKER), (36, INCONCLUSIVE), (80, FAILS)]
)
def test_margin_certificate_on_wilsons_interval_over_pairs(tmp_path, below, verdict):
    """Two runs, 800 correctly classified (point, checkpoint) pairs with a certificate;
    ``below`` of them have a minimal distance (the smaller of FAB and the PGD bound) under
    the certificate. Misclassified points and points no attack reached are left out."""
    runs = dict([run(0, n=100), run(1, 4, 7, n=100)])
    name0 = "margin_mnist_small/margin_cnn_small/seed0"
    hist, cks, pts, extra = runs[name0]
    pts = pts.copy()
    first = pts.index[:below]
    pts.loc[first, "certified_l2"] = pts.loc[first, "distance_l2"] * 1.01
    more = pts.iloc[:2].assign(index=[100, 101], margin=[-1.0, 1.0])
    more.loc[more.index[1], ["fab_l2", "pgd_l2_upper", "distance_l2"]] = math.nan
    runs[name0] = (hist, cks, pd.concat([pts, more]), extra)
    row = one(ledger(tmp_path, small(), files_of(SMALL, runs.items())), SMALL, "margin.certificate")
    want = iv.wilson(800 - below, 800)
    assert row.verdict == verdict
    assert (row.ours_mean, row.ci_lo, row.ci_hi) == pytest.approx((want.center, want.lo, want.hi))
    assert row.n == 800 and row.note == f"{800 - below} of 800 pairs"
    assert row.ci_method == "Wilson over (point, checkpoint) pairs"
    # one value per run: the share of its pairs that hold
    assert row.ours_spread == pytest.approx(np.std([(400 - below) / 400, 1.0], ddof=1))
    assert row.fragile == ""  # the interval stands on the pairs, not on the runs
    if verdict == INCONCLUSIVE:
        assert "straddles the weak threshold 0.95" in row.reason
        assert "(point, checkpoint) pairs would decide (now 800" in row.reason


def test_margin_robust_area_counts_the_points_of_each_split():
    """The compute function itself: a split with fewer points than attack_points (the train
    split of a 20-image rung) reports the points it has; one run is not applicable."""
    from ibrobust.claims.core import NotApplicable
    from ibrobust.studies.margin.measures import robust_area

    files = files_of("margin", [run(0), run(1)])
    summary, pts = files[MARGIN], files[MARGIN_POINTS]
    ctx = StudyContext("margin", default_config()["studies"]["margin"])
    m = robust_area("train")({"summary": summary, "points": pts}, ctx)
    # areas 0.35 -> 0.40 over STEP in both runs: slope 0.05 / STEP each
    assert m.values == (pytest.approx(0.05 / STEP),) * 2 and m.points == 10
    assert m.ci().unit == "(checkpoint, run) pairs"
    fewer = pts[(pts["split"] == "test") | (pts["index"] < 4)]
    m = robust_area("train")({"summary": summary, "points": fewer}, ctx)
    assert m.points == 4 and m.values == pytest.approx((0.0, 0.0), abs=1e-12)  # did not move
    assert robust_area("test")({"summary": summary, "points": fewer}, ctx).points == 10
    one_run = files_of("margin", [run(0)])
    with pytest.raises(NotApplicable, match="the study trains 1 loss-based run"):
        robust_area("train")({"summary": one_run[MARGIN], "points": one_run[MARGIN_POINTS]}, ctx)


def test_margin_runs_whose_points_did_not_move_do_not_hold(tmp_path):
    """Two runs whose 4 points at distance 2 stay at 2 (the others at 1): the area is 0.35 at
    both checkpoints of each, a pooled slope of exactly 0 with the interval [0, 0]: a tie,
    not "> 0" (strict): does not hold. (np.polyfit gave a slope of 1e-16 on the flat line,
    which held.)"""
    files = files_of(SMALL, [run(0, 4, 4), run(1, 4, 4)])
    df = ledger(tmp_path, small(), files)
    for split in ("train", "test"):
        row = one(df, SMALL, f"margin.robust_rises_{split}")
        assert (row.ours_mean, row.ci_lo, row.ci_hi) == (0.0, 0.0, 0.0)
        assert row.verdict == FAILS


def test_margin_robust_area_is_a_slope_over_every_checkpoint():
    """The compute function on two runs with three checkpoints at log10 L = -10, -10^1.1
    (-12.6) and -100: x = log10(-log10 L) = 1, 1.1, 2. Of their 10 points 4, 8 and 5 lie at
    distance 2 (the others at 1): areas over [0, 4] of 0.25 + 0.025 k = 0.35, 0.45, 0.375.
    The last is above the first (+0.025: a last-minus-first difference would read a rise),
    but the least-squares slope over the three is S_xy / S_xx = (sum x y - 3 mean x mean y)
    / (sum x^2 - 3 mean x^2) = (1.595 - 4.1 x 1.175 / 3) / (6.21 - 4.1^2 / 3) = (-13 / 1200)
    / (728 / 1200) = -1/56: robustness fell over the checkpoints."""
    from ibrobust.studies.margin.measures import robust_area

    cks = (("model-1", 2), ("model-2", 3), ("final", 4))
    hist, cks = history_table(range(5), [0.0, -5.0, -10.0, -(10**1.1), -100.0],
                              [-1.0, -0.1, 1e-3, 2e-3, 3e-3], [-1.0, -0.5, 1e-3, 2e-3, 3e-3],
                              checkpoints=cks)  # fmt: skip
    pts = margin_points({(name, split): [2.0] * k + [1.0] * (10 - k)
                         for (name, _), k in zip(cks.itertuples(index=False), (4, 8, 5),
                                                 strict=True)
                         for split in ("train", "test")})  # fmt: skip
    summary, points = margin_outputs({"r0": (hist, cks, pts), "r1": (hist, cks, pts)}, RADII)
    ctx = StudyContext("margin", default_config()["studies"]["margin"])
    m = robust_area("train")({"summary": summary, "points": points}, ctx)
    assert m.values == (pytest.approx(-1 / 56),) * 2 and m.points == 10
    assert m.ci().center == pytest.approx(-1 / 56)


def test_malformed_margin_outputs_fail(tmp_path):
    cfg = small()
    files = files_of(SMALL, [run(0), run(1, 4, 7)])
    summary, points = files[(SMALL, MARGIN[1])], files[(SMALL, MARGIN_POINTS[1])]
    where = (SMALL, MARGIN[1])
    old = summary.rename(columns={"cert_frac_holding": "cc_fab_above_cert"})
    fails(tmp_path, {**files, where: old}, where, "missing column 'cert_frac_holding'", cfg=cfg)
    bad = summary.assign(kkt_residual=-1.0)
    fails(tmp_path, {**files, where: bad}, where, "'kkt_residual'", "valid range", cfg=cfg)
    bad = summary.assign(homogeneity=0.5)  # a homogeneous net's order is at least 1
    fails(tmp_path, {**files, where: bad}, where, "'homogeneity'", "valid range", cfg=cfg)
    where = (SMALL, MARGIN_POINTS[1])
    for bad, fragments in (
        (points.drop(columns="run"), ("missing column 'run'",)),
        (points.assign(split="val"), ("'split' has values ['val']",)),
        (points.assign(distance_l2=-points.distance_l2), ("'distance_l2'", "valid range")),
        (points.assign(margin="x"), ("'margin' is not numeric",)),
    ):
        fails(tmp_path, {**files, where: bad}, where, *fragments, cfg=cfg)
    where = (SMALL, "figures/schedules.csv")
    stalls = margin_schedules({"seed0": (-150.0, -2.0)})
    for bad, fragments in (
        (stalls.drop(columns="log10_loss_constant"), ("missing column 'log10_loss_constant'",)),
        (stalls.assign(epochs=0), ("'epochs'", "valid range")),
    ):
        fails(tmp_path, {**files, where: bad}, where, *fragments, cfg=small(lr=1e-3))


def fails(tmp_path, files: dict, where: tuple[str, str], *fragments: str, cfg=None) -> None:
    with pytest.raises(SummaryError) as err:
        ledger(tmp_path, cfg or default_config(), files)
    msg = str(err.value)
    assert str(tmp_path / where[0] / where[1]) in msg, msg
    for f in fragments:
        assert f in msg, msg


def test_the_fixture_history_has_the_workflows_checkpoints():
    hist, cks = margin_history()
    assert list(cks.itertuples(index=False, name=None)) == list(MARGIN_CHECKPOINTS)
    assert {"epoch", "log10_train_loss", "normalized_margin", "smoothed_normalized_margin",
            "train_acc"} <= set(hist.columns)  # fmt: skip
