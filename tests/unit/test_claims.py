"""The claims ledger on hand-made study outputs: each study's claims reach each verdict
(holds / holds weaker / inconclusive / does not hold / not run) on hand-computed intervals,
and malformed outputs fail loudly, naming the file and the column."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from claims_fixtures import (
    MARGIN_CHECKPOINTS,
    T_975_1,
    T_975_2,
    T_975_3,
    T_975_5,
    T_975_15,
    default_config,
    fa_margin_gradient,
    fa_scaling,
    fa_summary,
    images_outputs,
    ledger,
    margin_history,
    margin_outputs,
    margin_points,
    one,
    prelu_summary,
    prelu_table1,
    price_nn_summary,
    price_outputs,
    t_ends,
    verdicts,
    write,
)

from ibrobust.claims import intervals as iv
from ibrobust.claims.core import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_RUN,
    WEAKER,
    Measurement,
    NotRun,
    Rule,
    SummaryError,
    at_least,
    at_most,
    between,
)
from ibrobust.ledger.table import build_ledger, study_outputs, study_paths


# ---- rules and measurements ---------------------------------------------------------------------
def test_rule_words_state_the_regions_at_the_level():
    assert at_least("ratio", 1.5, 1.0).text() == (
        "holds: the 95 % interval of ratio >= 1.5; holds weaker: >= 1; does not hold: wholly "
        "outside it; else inconclusive"
    )
    assert at_most("d", 0.2, 0.4).text(0.9).startswith("holds: the 90 % interval of d <= 0.2;")
    assert "within [0.5, 1.5]; holds weaker: within [0.333, 2]" in between(
        "r", (0.5, 1.5), (1 / 3, 2.0)
    ).text(0.95)


def test_rules_refuse_empty_regions_and_a_weak_region_not_holding_the_strong():
    with pytest.raises(ValueError, match="is empty"):
        Rule("x", (1.0, 0.0), (-1.0, 2.0))
    with pytest.raises(ValueError, match="must contain"):
        at_most("x", 0.5, 0.2)
    with pytest.raises(ValueError, match="must contain"):
        between("x", (0.5, 1.5), (0.6, 2.0))
    assert at_least("x", 1.5, 1.0).thresholds() == [1.0, 1.5]


def test_measurement_mean_spread_and_its_interval():
    m = Measurement((1.0, 2.0, 3.0))
    assert (m.mean, m.spread, m.n) == (2.0, 1.0, 3)
    got = m.ci()  # mean 2, sd 1: 2 -+ t(2) / sqrt(3)
    assert (got.lo, got.hi) == pytest.approx(
        (2 - T_975_2 / math.sqrt(3), 2 + T_975_2 / math.sqrt(3))
    )
    assert Measurement((4.0,)).spread == 0.0 and Measurement((4.0,)).ci() is None
    with pytest.raises(ValueError, match="finite"):
        Measurement((1.0, float("nan")))
    with pytest.raises(NotRun, match="no values"):
        Measurement(())


def test_a_measurement_with_its_own_interval_reports_it():
    w = iv.wilson(45, 50)
    m = Measurement((0.8, 1.0), unit="runs", interval=w)
    assert (m.mean, m.n, m.spread) == (pytest.approx(0.9), 2, pytest.approx(math.sqrt(0.02)))
    assert m.ci().n == 50  # the interval stands on the points, n on the runs with a value
    assert m.ci() == w
    with pytest.raises(ValueError, match="at level 0.95 asked for at 0.9"):
        m.ci(0.9)


# ---- Study FA ------------------------------------------------------------------------------------
FA = ("fa", "figures/summary.csv")
FA_SCALING = ("fa", "figures/critical_radius_scaling.csv")
FA_MARGIN = ("fa", "figures/margin_gradient_summary.csv")


@pytest.mark.parametrize(
    "multiclass, verdict",
    [
        ((20.0, 21.0, 19.0), HOLDS),  # ratios 2.0, 2.1, 1.9: [1.752, 2.248]
        ((12.5, 13.0, 12.0), WEAKER),  # 1.25 +- 0.124: in [1, inf), not in [1.5, inf)
        ((9.0, 13.0, 11.0), INCONCLUSIVE),  # 1.1 +- 0.497 straddles 1
        ((7.0, 7.5, 6.5), FAILS),  # [0.576, 0.824]
    ],
)
def test_fa_kclass_over_binary_on_the_t_interval_over_seeds(tmp_path, multiclass, verdict):
    files = {FA: fa_summary(binary=(10.0, 10.0, 10.0), multiclass=multiclass)}
    df = ledger(tmp_path, default_config(), files)
    rows = df.loc[("fa", "fa.kclass_over_binary")]
    assert len(rows) == 3  # one per readout of the study, the same numbers under each
    row = rows.iloc[0]
    ratios = [m / 10 for m in multiclass]
    assert row.verdict == verdict
    assert row.ours_mean == pytest.approx(sum(ratios) / 3)
    assert row.ours_spread == pytest.approx(pd.Series(ratios).std())
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(ratios, T_975_2))
    assert (row.n, row.unit, row.points, row.ci_method) == (3, "seeds", 1000, "t over seeds")
    assert (row.strong_lo, row.strong_hi, row.weak_lo, row.weak_hi) == (
        1.5,
        math.inf,
        1.0,
        math.inf,
    )
    assert not row.lower_bound
    if verdict == INCONCLUSIVE:
        assert row.reason == (
            "interval [0.603, 1.6] straddles the weak threshold 1; about 18 seeds would decide "
            "(now 3, from the measured spread)"
        )
    else:  # the weaker interval [1.126, 1.374] lies below 1.5: it straddles no threshold
        assert row.reason == ""


def test_fa_claims_on_a_feature_averaging_run(tmp_path):
    files = {FA: fa_summary(), FA_SCALING: fa_scaling(-0.5), FA_MARGIN: fa_margin_gradient()}
    df = ledger(tmp_path, default_config(), files)
    for id_ in (
        "fa.gradient_per_margin",
        "fa.binary_radius",
        "fa.reference_radius",
        "fa.averaging_index",
        "fa.decoupling_index",
        "fa.cosine_blocks",
        "fa.span_residual",
        "fa.scaling_slope",
        "fa.scaling_slope_d",
    ):
        assert verdicts(df, "fa", id_) == [HOLDS], id_
    # one row per binary readout of the study (config.yaml: sum, argmax, log_odds)
    assert verdicts(df, "fa", "fa.ce_over_margin") == [HOLDS] * 3
    # binary radius / sqrt(d/k) = (1.0, 1.05, 0.95): [0.876, 1.124] inside [0.5, 1.5]
    row = one(df, "fa", "fa.binary_radius")
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((1.0, 1.05, 0.95), T_975_2))
    # the default k-class radii (17, 16, 18) over (10, 10.5, 9.5): mean 1.71, [1.24, 2.17]
    assert verdicts(df, "fa", "fa.kclass_over_binary") == [WEAKER] * 3
    reason = df.loc[("fa", "fa.kclass_over_binary")].reason.iloc[0]
    assert "straddles the strong threshold 1.5" in reason
    # cosine blocks at 0.33 x sqrt(5) = 0.74 of theory: [0.713, 0.777] is weaker; an index
    # of [0.123, 0.410] lies wholly under 0.5: not averaging
    df = ledger(
        tmp_path,
        default_config(),
        {FA: fa_summary(cosine_binary=(0.33, 0.33, 0.34), fa_binary=(0.3, 0.2, 0.3))},
    )
    assert verdicts(df, "fa", "fa.cosine_blocks") == [WEAKER]
    assert verdicts(df, "fa", "fa.averaging_index") == [FAILS]


def test_fa_censored_reference_radius_has_no_upper_end(tmp_path):
    # robust on the whole grid: the grid's top (32) / sqrt(1000) for every seed, a lower bound
    df = ledger(tmp_path, default_config(), {FA: fa_summary()})
    ref = one(df, "fa", "fa.reference_radius")
    assert ref.verdict == HOLDS and ref.lower_bound
    assert ref.ours_mean == pytest.approx(32 / math.sqrt(1000))
    assert ref.ci_lo == pytest.approx(32 / math.sqrt(1000)) and ref.ci_hi == math.inf
    assert ref.ci_method == "t over seeds, censored above"
    # one seed off the grid, two at radius 2: (1.012, 0.063, 0.063), mean 0.379; the lower
    # end -0.98 straddles 0.25, and more seeds (not a larger grid) can lift it
    df = ledger(tmp_path, default_config(), {FA: fa_summary(reference=(math.nan, 2.0, 2.0))})
    ref = one(df, "fa", "fa.reference_radius")
    values = (32 / math.sqrt(1000), 2 / math.sqrt(1000), 2 / math.sqrt(1000))
    assert ref.verdict == INCONCLUSIVE and ref.lower_bound and ref.ci_hi == math.inf
    assert ref.ci_lo == pytest.approx(t_ends(values, T_975_2)[0])
    assert ref.reason.startswith("interval [-0.981, inf] straddles the weak threshold 0.25; about")
    assert ref.reason.endswith("seeds would decide (now 3, from the measured spread)")


def pooled_half(xs, slopes) -> float:
    """Half-width of the 95 % interval of the slope common to two seeds whose log radii are
    c_i + s_i x on the same x, an intercept per seed (8 pairs, 8 - 2 - 1 = 5 df): the
    common slope is the mean slope, the residuals (s_i - mean)(x - mean x), so SSR = 2 d^2
    Sxx1 (d = |s_0 - s_1| / 2, Sxx1 = sum (x - mean x)^2) over Sxx = 2 Sxx1: SE = d / sqrt(5),
    whatever x is."""
    d = abs(slopes[0] - slopes[1]) / 2
    return T_975_5 * d / math.sqrt(5)


@pytest.mark.parametrize(
    "slopes, verdict",
    [
        ((-0.45, -0.55), HOLDS),  # -0.5 +- 0.057
        ((-0.17, -0.23), WEAKER),  # -0.2 +- 0.034: in [-1, -0.1], not in [-0.7, -0.3]
        ((-0.05, -0.95), INCONCLUSIVE),  # -0.5 +- 0.517 straddles -1 and -0.1
        ((-0.02, -0.02), FAILS),  # -0.02 exactly: above -0.1
    ],
)
def test_fa_scaling_slope_on_the_pooled_slope_interval(tmp_path, slopes, verdict):
    """Two seeds, each a power law over k = 2, 4, 10, 20 with its own slope."""
    files = {FA: fa_summary(), FA_SCALING: fa_scaling(slope=slopes)}
    row = one(ledger(tmp_path, default_config(), files), "fa", "fa.scaling_slope")
    mean = sum(slopes) / 2
    half = pooled_half([2, 4, 10, 20], slopes)
    assert row.verdict == verdict
    assert (row.ours_mean, row.ci_lo, row.ci_hi) == pytest.approx(
        (mean, mean - half, mean + half), abs=1e-9
    )
    method = "t of the pooled OLS slope, an intercept per group"
    assert (row.n, row.unit, row.ci_method) == (8, "(k, seed) pairs", method)
    assert row.ours_spread == pytest.approx(abs(slopes[0] - slopes[1]) / math.sqrt(2))
    assert row.note == "2 seeds' slopes " + ", ".join(f"{s:.3f}" for s in slopes)


def test_fa_scaling_slope_d_and_values_off_the_grid(tmp_path):
    scaling = fa_scaling(slope_d=(0.49, 0.51))
    df = ledger(tmp_path, default_config(), {FA: fa_summary(), FA_SCALING: scaling})
    row = one(df, "fa", "fa.scaling_slope_d")
    half = pooled_half([250, 500, 1000, 2000], (0.49, 0.51))
    assert row.verdict == HOLDS
    assert (row.ci_lo, row.ci_hi) == pytest.approx((0.5 - half, 0.5 + half))
    # a k whose radius never fell to 50 % (NaN) is left out of the fit, not counted as 0
    off = scaling.copy()
    off.loc[(off.key == "k") & (off.value == 20) & (off.label == "binary"), "critical_radius"] = (
        math.nan
    )
    df = ledger(tmp_path, default_config(), {FA: fa_summary(), FA_SCALING: off})
    row = one(df, "fa", "fa.scaling_slope")
    assert row.n == 6 and row.ours_mean == pytest.approx(-0.5)


def test_fa_gradient_per_margin(tmp_path):
    files = {FA: fa_summary(), FA_MARGIN: fa_margin_gradient(reference=(15.0, 15.5, 14.5))}
    row = one(ledger(tmp_path, default_config(), files), "fa", "fa.gradient_per_margin")
    ratios = (15 / 12, 15.5 / 12.5, 14.5 / 11.5)
    assert row.verdict == WEAKER  # [1.224, 1.276]: over 1, under 1.5
    assert row.ours_mean == pytest.approx(sum(ratios) / 3)
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(ratios, T_975_2))


def test_readouts_the_summary_does_not_have_are_not_run(tmp_path):
    cfg = default_config()
    cfg["studies"]["fa"]["readouts"] = ["sum", "argmax"]
    kw = dict(binary=(10.0, 10.0, 10.0), multiclass=(20.0, 21.0, 19.0))
    df = ledger(tmp_path, cfg, {FA: fa_summary(readouts=None, **kw)})
    rows = by_readout(df, "fa.kclass_over_binary")
    assert rows.verdict.to_dict() == {"sum": HOLDS, "argmax": NOT_RUN}
    assert "no 'readout' column" in rows.reason["argmax"]
    # with a readout column, each readout is judged on its own rows
    summary = fa_summary(readouts=None, **kw)
    argmax = summary[summary.setting == "multiclass"].assign(**{"critical_radius.worst": 11.0})
    summary = pd.concat([summary.assign(readout="sum"), argmax.assign(readout="argmax")])
    df = ledger(tmp_path, cfg, {FA: summary})
    rows = by_readout(df, "fa.kclass_over_binary")
    assert rows.verdict.to_dict() == {"sum": HOLDS, "argmax": WEAKER}
    assert rows.ours_mean["argmax"] == pytest.approx(1.1)


def by_readout(df: pd.DataFrame, id_: str) -> pd.DataFrame:
    rows = df.loc[("fa", id_)]
    return rows.set_axis(rows.index.str.rsplit(" ", n=1).str[-1])


def test_not_run_reasons(tmp_path):
    cfg = default_config(fa_images=False)
    df = ledger(tmp_path, cfg, {FA: fa_summary()}).reset_index()
    images = df[df.study == "fa_images"]
    assert len(images) == 4 * 3 and set(images.verdict) == {NOT_RUN}  # x 3 readouts
    assert set(images.reason) == {"study disabled (enabled: false)"}
    scaling = df[df.id == "fa.scaling_slope"].iloc[0]
    assert scaling.verdict == NOT_RUN and "critical_radius_scaling.csv" in scaling.reason
    mnist = df[df.id.str.startswith("prelu.mnist")]
    assert len(mnist) == 6 and all("table1.csv" in r for r in mnist.reason)
    assert (df[df.study == "price_linear"].verdict == NOT_RUN).all()
    # a not-run row has no number: no interval, no units
    assert images.ours_mean.isna().all() and images.ci_lo.isna().all()
    assert (images.n == 0).all() and (images.points == 0).all() and (images.ci_method == "").all()


def test_only_the_files_this_build_provides_count(tmp_path):
    cfg = default_config()
    write(tmp_path, *FA, fa_summary())
    stale = write(tmp_path, *FA_SCALING, fa_scaling())
    paths = study_paths("feature_averaging", "fa", tmp_path)
    df = build_ledger(study_outputs(cfg, tmp_path, provided=[paths["summary"]]))
    row = df[df.id == "fa.scaling_slope"].iloc[0]
    assert row.verdict == NOT_RUN and str(stale) in row.reason
    assert df[df.id == "fa.binary_radius"].iloc[0].verdict == HOLDS


def test_fa_claims_per_trained_net_when_a_study_has_several(tmp_path):
    """fa_prelu trains two nets per dataset (p = 1 and 3): one row set per net, each computed
    on that net's rows (and the shared reference's), not a failure on duplicated seeds."""
    cfg = default_config()
    cfg["studies"]["fa"]["models"] = ["two_layer_m5", "prelu_p1"]
    strong = fa_summary(binary=(10.0, 10.0, 10.0), multiclass=(20.0, 21.0, 19.0))
    weak = fa_summary(multiclass=(7.0, 7.5, 6.5), binary=(10.0, 10.0, 10.0))
    weak = weak.query("setting != 'robust reference'")
    both = pd.concat([strong, weak.assign(model="prelu_p1")], ignore_index=True)
    df = ledger(tmp_path, cfg, {FA: both})
    rows = df.loc[("fa", "fa.kclass_over_binary")]
    by_net = {s.rsplit(", ", 2)[1]: v for s, v in zip(rows.index, rows.verdict, strict=True)}
    assert set(by_net) == {"two_layer_m5", "prelu_p1"}
    assert sorted(rows.verdict) == sorted([HOLDS] * 3 + [FAILS] * 3)
    assert {v for s, v in zip(rows.index, rows.verdict, strict=True) if "prelu_p1" in s} == {FAILS}
    # the reference is shared: both nets' reference rows see its three seeds
    assert list(df.loc[("fa", "fa.reference_radius")].n) == [3, 3]


# ---- Study FA-IMAGES -----------------------------------------------------------------------------
IMAGES = ("fa_images", "figures/summary.csv")
IMAGES_CURVES = ("fa_images", "figures/robust_accuracy_vs_radius.csv")
IMAGE_RADII = (("mnist_parity", (1.2, 1.6)), ("cifar10_halves", (0.4, 0.8)))


def _images(multi, binary) -> dict:
    """Both outputs of a study whose k-class / 2-class nets have worst-case robust accuracy
    ``multi`` / ``binary`` per seed at every report radius."""
    acc = {}
    for ds, radii in IMAGE_RADII:
        for e in radii:
            acc[(ds, "multiclass", e)] = multi
            acc[(ds, "binary", e)] = binary
    summary, curves = images_outputs(acc)
    return {IMAGES: summary, IMAGES_CURVES: curves}


@pytest.mark.parametrize(
    "multi, binary, verdict",
    [
        ((0.80, 0.82, 0.78), (0.50, 0.50, 0.50), HOLDS),  # 0.30 +- 0.050 >= 0.11
        ((0.62, 0.64, 0.60), (0.55, 0.55, 0.55), WEAKER),  # 0.07 +- 0.050 straddles 0.11
        ((0.60, 0.50, 0.55), (0.50, 0.55, 0.50), INCONCLUSIVE),  # 0.033 +- 0.19 straddles 0
        ((0.50, 0.50, 0.50), (0.60, 0.61, 0.59), FAILS),  # -0.10 +- 0.050
    ],
)
def test_fa_images_claims_on_per_seed_differences(tmp_path, multi, binary, verdict):
    df = ledger(tmp_path, default_config(fa_images=True), _images(multi, binary))
    rows = df.loc[("fa_images", "fa_images.mnist_parity@1.2")]
    assert len(rows) == 3  # one per readout
    row = rows.iloc[0]
    diffs = [m - b for m, b in zip(multi, binary, strict=True)]
    assert row.verdict == verdict
    # (the per-run tables hold float32 accuracies, as the attack jobs write them)
    assert row.ours_mean == pytest.approx(sum(diffs) / 3, abs=1e-6)
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(diffs, T_975_2), abs=1e-6)
    assert (row.n, row.unit, row.points) == (3, "seeds", 500)  # the study's attack_points
    assert (row.strong_lo, row.weak_lo) == (0.11, 0.0)  # half the paper's gap 0.80 - 0.58
    assert row.note == f"k-class {sum(multi) / 3:.3f} vs 2-class {sum(binary) / 3:.3f}"
    if verdict == WEAKER:
        assert "straddles the strong threshold 0.11" in row.reason
    if verdict == INCONCLUSIVE:
        assert "straddles the weak threshold 0" in row.reason and "seeds would decide" in row.reason


def test_fa_images_pairs_seeds_and_judges_each_readout_on_its_own_curves(tmp_path):
    """The difference is paired by seed (the seeds' shared data and test points): a seed
    effect common to both nets leaves a narrow interval. The argmax readout's k-class curve
    is 0.1 lower at radius 1.2: only its row moves."""
    files = _images((0.90, 0.70, 0.50), (0.60, 0.40, 0.20))  # diffs 0.3 each
    curves = files[IMAGES_CURVES]
    at = (
        (curves.readout == "argmax")
        & (curves.supervision == "multiclass")
        & (curves.attack == "worst")
        & (curves.eps == 1.2)
    )
    files[IMAGES_CURVES] = curves.assign(robust_acc=curves.robust_acc - 0.1 * at)
    df = ledger(tmp_path, default_config(fa_images=True), files)
    rows = df.loc[("fa_images", "fa_images.mnist_parity@1.2")]
    got = {s.rsplit(" ", 1)[-1]: r for s, r in rows.iterrows()}
    assert got["sum"].verdict == HOLDS and got["sum"].ci_lo == pytest.approx(0.3)
    assert got["sum"].ci_hi == pytest.approx(0.3)
    assert got["argmax"].ours_mean == pytest.approx(0.2)
    assert got["log_odds"].ours_mean == pytest.approx(0.3)


PRICE = ("price_linear", "figures/summary.csv")
PRICE_PROBLEMS = ("price_linear", "figures/gap_vs_n.csv")


# ---- Study PRICE-LIN -----------------------------------------------------------------------------
def _price(diff_by_draw) -> dict:
    """Both outputs of a study in which, on every regime, GD's robust gap at eps = 0.5 gamma*
    minus every other optimizer's is ``diff_by_draw[draw]`` on average over n (GD's gap also
    moves with n by +-0.02); every gap moves with the draw by 0.05 x draw (the draw's
    training set), which pairing by draw removes; elsewhere every optimizer's gap is the
    same."""
    n_shift = {16: 0.02, 32: 0.0, 64: -0.02}

    def gap(ds, o, f, n, draw):
        common = 0.02 + 0.05 * draw
        if f == 0.5 and o == "lin_gd":
            return common + diff_by_draw[draw] + n_shift[n]
        return common

    summary, problems = price_outputs(gap)
    return {PRICE: summary, PRICE_PROBLEMS: problems}


@pytest.mark.parametrize(
    "diffs, verdict",
    [
        ((0.07, 0.08, 0.09, 0.08), HOLDS),  # 0.08 +- 0.013 >= 0.01
        ((0.005, 0.006, 0.004, 0.005), WEAKER),  # 0.005 +- 0.0013: >= 0, < 0.01
        ((-0.02, 0.03, 0.01, 0.02), INCONCLUSIVE),  # 0.01 +- 0.034 straddles 0
        ((-0.05, -0.06, -0.04, -0.05), FAILS),
    ],
)
def test_price_gd_minus_cd_paired_by_draw(tmp_path, diffs, verdict):
    df = ledger(tmp_path, default_config(), _price(diffs))
    row = one(df, "price_linear", "price.gd_minus_cd")
    assert row.verdict == verdict
    assert row.ours_mean == pytest.approx(sum(diffs) / 4)
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(diffs, T_975_3))
    assert (row.n, row.unit, row.ci_method) == (4, "draws", "t over draws")
    # the sparse-teacher, dense-input regime of the config (k_w < d = k_x)
    assert row.name == "teacher_w4_x512, eps = 0.5 gamma*"
    if verdict == INCONCLUSIVE:
        assert "about" in row.reason and "draws would decide (now 4" in row.reason


def test_price_growth_and_vanishing_at_the_margin(tmp_path):
    # GD - CD: 0.02 at 0.25 gamma*, 0.02 + (0.03, 0.04, 0.05, 0.04) at 0.75 gamma*
    growth = (0.03, 0.04, 0.05, 0.04)
    at_margin = (0.004, 0.006, 0.005, 0.005)  # GD - CD per draw at 0.99 gamma*, every regime

    def gap(ds, o, f, n, draw):
        if o != "lin_gd":
            return 0.1
        return 0.1 + {0.25: 0.02, 0.75: 0.02 + growth[draw], 0.99: at_margin[draw]}.get(f, 0.08)

    summary, problems = price_outputs(gap)
    df = ledger(tmp_path, default_config(), {PRICE: summary, PRICE_PROBLEMS: problems})
    row = one(df, "price_linear", "price.gap_grows_with_eps")
    assert row.verdict == HOLDS and row.ours_mean == pytest.approx(0.04)
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(growth, T_975_3))
    # |GD - CD| at 0.99 gamma*, one value per (regime, draw): 4 x 4, 0.005 +- 0.0004 <= 0.01
    row = one(df, "price_linear", "price.vanishes_at_margin")
    assert row.verdict == HOLDS and (row.n, row.unit) == (16, "(regime, draw) pairs")
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(at_margin * 4, T_975_15))
    assert verdicts(df, "price_linear", "price.gd_minus_cd") == [HOLDS]  # 0.08 everywhere
    assert verdicts(df, "price_linear", "price.gd_minus_diag_gd") == [HOLDS]

    def apart(ds, o, f, n, draw):  # at the margin GD - CD differs by 0.05 per regime
        return 0.1 + (0.05 if (o == "lin_gd" and f == 0.99) else 0.0)

    summary, problems = price_outputs(apart)
    df = ledger(tmp_path, default_config(), {PRICE: summary, PRICE_PROBLEMS: problems})
    assert verdicts(df, "price_linear", "price.vanishes_at_margin") == [FAILS]
    assert verdicts(df, "price_linear", "price.gap_grows_with_eps") == [HOLDS]  # 0 >= 0
    assert verdicts(df, "price_linear", "price.gd_minus_cd") == [WEAKER]  # 0: >= 0, < 0.01


def test_price_claims_need_a_sparse_teacher_regime_and_their_optimizers(tmp_path):
    files = _price((0.08,) * 4)
    cfg = default_config()
    cfg["studies"]["price_linear"]["optimizers"] = ["lin_gd", "lin_cd", "lin_sd"]
    df = ledger(tmp_path, cfg, files)
    row = one(df, "price_linear", "price.gd_minus_diag_gd")
    assert row.verdict == NOT_RUN and row.reason == "the study runs no diag_gd optimizer"
    cfg = default_config()
    cfg["studies"]["price_linear"]["datasets"] = ["teacher_w512_x512", "teacher_w4_x4"]
    df = ledger(tmp_path, cfg, files)
    row = one(df, "price_linear", "price.gd_minus_cd")
    assert row.verdict == NOT_RUN and "no sparse-teacher, dense-input regime" in row.reason


# ---- Study PRELU ---------------------------------------------------------------------------------
PRELU = ("prelu", "figures/summary.csv")
TABLE1 = ("prelu", "figures/table1.csv")


def test_prelu_synthetic_claims_on_two_seeds(tmp_path):
    summary = prelu_summary(
        radius={1: (0.31, 0.32), 3: (0.8, 0.8), 4: (0.45, 0.45)},
        frac_single={1: 0.1, 3: 0.95, 4: 0.9},
        dist={1: (0.1, 0.6), 3: (0.5, 0.3), 4: (0.5, 0.1)},
    )
    df = ledger(tmp_path, default_config(), {PRELU: summary})
    row = one(df, "prelu", "prelu.relu_radius")
    values = (0.31 * math.sqrt(10), 0.32 * math.sqrt(10))  # radius x sqrt(K), K = 10
    assert row.verdict == HOLDS  # [0.795, 1.197] inside [0.7, 1.3]
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(values, T_975_1))
    assert (row.n, row.points) == (2, 1000)
    assert verdicts(df, "prelu", "prelu.p3_radius") == [HOLDS]  # 0.8 / 0.707 twice
    assert verdicts(df, "prelu", "prelu.p4_radius") == [WEAKER]  # 0.45 / 0.707 = 0.64
    assert verdicts(df, "prelu", "prelu.relu_averages") == [HOLDS]
    assert verdicts(df, "prelu", "prelu.p3_single") == [HOLDS]
    assert verdicts(df, "prelu", "prelu.relu_dist_F") == [HOLDS]
    assert verdicts(df, "prelu", "prelu.p3_dist_Fp") == [WEAKER]
    # two seeds 0.03 apart: t(1) = 12.7 makes the interval [0.39, 1.60], over 0.5
    summary = prelu_summary({1: (0.30, 0.33)}, {1: 0.1}, {1: (0.1, 0.6)})
    row = one(ledger(tmp_path, default_config(), {PRELU: summary}), "prelu", "prelu.relu_radius")
    assert row.verdict == INCONCLUSIVE
    assert row.reason.startswith("interval [0.393, 1.6] straddles the weak threshold 0.5;")


@pytest.mark.parametrize(
    "acc, points, verdict",
    [
        ({1: 0.30, 4: 0.75}, 1000, HOLDS),  # 0.45, about +-0.04 >= 0.237
        ({1: 0.30, 4: 0.50}, 100, WEAKER),  # 0.20, about +-0.13: straddles 0.237
        ({1: 0.30, 4: 0.33}, 100, INCONCLUSIVE),  # 0.03, about +-0.13: straddles 0
        ({1: 0.50, 4: 0.30}, 1000, FAILS),
    ],
)
def test_prelu_mnist_one_seed_on_newcombes_interval(tmp_path, acc, points, verdict):
    files = {PRELU: prelu_summary({1: (0.31, 0.32)}, {1: 0.1}, {1: (0.1, 0.6)})}
    files[TABLE1] = prelu_table1(acc, n_points=points)
    row = one(ledger(tmp_path, default_config(), files), "prelu", "prelu.mnist_l2_1")
    d = acc[4] - acc[1]
    assert row.verdict == verdict
    assert row.ours_mean == pytest.approx(d)
    want = iv.newcombe(acc[4], points, acc[1], points)
    assert (row.ci_lo, row.ci_hi) == pytest.approx((want.lo, want.hi))
    # by hand: the half-widths of the two Wilson intervals, added in quadrature (~ normal)
    half = 1.96 * math.sqrt((acc[4] * (1 - acc[4]) + acc[1] * (1 - acc[1])) / points)
    assert (row.ci_lo, row.ci_hi) == pytest.approx((d - half, d + half), abs=0.1 * half)
    assert (row.n, row.unit, row.points) == (points, "points", points)
    assert row.ci_method == "Newcombe over points"
    assert row.note == f"p=4 {acc[4]:.3f} vs p=1 {acc[1]:.3f}"
    if verdict == INCONCLUSIVE:
        assert "points would decide (now 100" in row.reason


def test_prelu_mnist_several_seeds_on_the_t_interval_of_paired_differences(tmp_path):
    t1 = prelu_table1({1: (0.30, 0.30, 0.30), 4: (0.75, 0.80, 0.70)})
    assert list(t1[(t1.column == "l2 1") & (t1.p == 4)].per_seed) == ["0.75 0.8 0.7"]
    row = one(ledger(tmp_path, default_config(), {TABLE1: t1}), "prelu", "prelu.mnist_l2_1")
    assert row.verdict == HOLDS  # 0.45 +- 0.124 >= 0.237
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0.45, 0.5, 0.4), T_975_2))
    assert (row.n, row.unit, row.ci_method, row.points) == (3, "seeds", "t over seeds", 1000)


# ---- Study PRICE-NN ------------------------------------------------------------------------------
PRICE_NN = ("price_nn", "figures/summary.csv")


def test_price_nn_claims(tmp_path):
    cnn = {(50, 0.1): (2.0, 3.0), (200, 0.2): (1.0, 2.0), (200, 0.1): (-40.0, -38.0)}
    summary = price_nn_summary({0.1: (5.0, 3.0, 4.0)}, (0.5, -0.5, 0.2), cnn, [(200, 0.1)])
    df = ledger(tmp_path, default_config(price_nn=True), {PRICE_NN: summary})
    row = one(df, "price_nn", "price_nn.fc_sd_beats_gd")
    assert row.verdict == HOLDS  # 4 +- 2.48 >= 1
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((5, 3, 4), T_975_2))
    assert (row.n, row.unit, row.points) == (3, "seeds", 500)  # one eps: a value per seed
    row = one(df, "price_nn", "price_nn.fc_erm_closes")
    assert row.verdict == WEAKER  # [-1.21, 1.34]: within +-2, not within +-1
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0.5, -0.5, 0.2), T_975_2))
    # the CNN cell whose GD run did not fit its training set is left out: 4 (cell, seed) pairs
    row = one(df, "price_nn", "price_nn.cnn_gd_ahead")
    assert row.verdict == HOLDS and row.note == "2 of 3 cells fitted"
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((2, 3, 1, 2), T_975_3))
    assert (row.n, row.unit, row.points) == (
        4,
        "(cell, seed) pairs",
        500,
    )  # config.yaml's attack_points
    summary = price_nn_summary({0.1: (2.0, -1.0, 0.5)}, (0.1, -0.1, 0.0))
    df = ledger(tmp_path, default_config(price_nn=True), {PRICE_NN: summary})
    assert verdicts(df, "price_nn", "price_nn.fc_sd_beats_gd") == [INCONCLUSIVE]
    assert verdicts(df, "price_nn", "price_nn.fc_erm_closes") == [HOLDS]
    row = one(df, "price_nn", "price_nn.cnn_gd_ahead")
    assert (
        row.verdict == NOT_RUN and row.reason == "no cnn rows of robust_test_acc_worst at eps > 0"
    )
    # two training eps: one value per (seed, eps)
    summary = price_nn_summary({0.1: (5.0, 3.0, 4.0), 0.2: (2.0, 2.0, 2.0)}, (0.0, 0.0, 0.0))
    row = one(ledger(tmp_path, default_config(price_nn=True), {PRICE_NN: summary}), "price_nn",
              "price_nn.fc_sd_beats_gd")  # fmt: skip
    assert (row.n, row.unit) == (6, "(seed, eps) pairs")
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((5, 3, 4, 2, 2, 2), T_975_5))


# ---- Study MARGIN --------------------------------------------------------------------------------
MARGIN = ("margin", "figures/summary.csv")
MARGIN_POINTS = ("margin", "figures/points.csv")
MARGIN_RADII = default_config()["studies"]["margin"]["robustness"]["radii"]  # l2 middle: 1.5


def _margin_run(seed: int, robust_first: int, robust_last: int, n: int = 10, **history) -> tuple:
    """One run's tables: of its ``n`` train (and test) points, ``robust_first`` /
    ``robust_last`` lie farther than 1.5 (the l2 grid's middle) at the first / last
    checkpoint."""
    hist, cks = margin_history(**history)
    (first, _), (last, _) = MARGIN_CHECKPOINTS

    def dists(k):
        return [2.0] * k + [1.0] * (n - k)

    pts = {(c, s): dists(k) for c, k in ((first, robust_first), (last, robust_last))
           for s in ("train", "test")}  # fmt: skip
    return f"margin_mnist/margin_cnn_small/seed{seed}", (hist, cks, margin_points(pts))


def _margin_files(runs) -> dict:
    summary, points = margin_outputs(dict(runs), MARGIN_RADII)
    return {MARGIN: summary, MARGIN_POINTS: points}


def test_margin_claims_over_three_runs(tmp_path):
    runs = [
        _margin_run(0, 4, 6, log10_loss_end=-400.0, margin_growth=3.0),
        _margin_run(1, 4, 7, log10_loss_end=-410.0, margin_growth=3.2),
        _margin_run(2, 4, 5, log10_loss_end=-390.0, margin_growth=2.8, smoothed_dip=1e-4),
    ]
    df = ledger(tmp_path, default_config(margin=True), _margin_files(runs))
    row = one(df, "margin", "margin.loss_below_1e-300")
    assert row.verdict == HOLDS and (row.n, row.unit) == (3, "runs")
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((-400, -410, -390), T_975_2))
    row = one(df, "margin", "margin.normalized_grows")
    assert row.verdict == HOLDS
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((3.0, 3.2, 2.8), T_975_2))
    # decreasing in 0, 0 and 1 of 3 epochs after the fit: mean 1/9, [-0.37, 0.59]
    row = one(df, "margin", "margin.smoothed_monotone")
    assert row.verdict == INCONCLUSIVE
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0, 0, 1 / 3), T_975_2))
    # robust accuracy at l2 radius 1.5 rises by 0.2, 0.3, 0.1 (10 points per split)
    for split in ("train", "test"):
        row = one(df, "margin", f"margin.robust_rises_{split}")
        assert row.verdict == WEAKER  # [-0.048, 0.448]: over -0.05, straddles 0
        assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0.2, 0.3, 0.1), T_975_2))
        assert (row.points, row.ci_method) == (MARGIN_N_POINTS, "t over runs")
    # every distance is twice its certificate: 3 runs x 2 checkpoints x 2 splits x 10 points;
    # 120 of 120 give a Wilson lower end 120 / (120 + z^2) = 0.969: under 0.99, over 0.95
    row = one(df, "margin", "margin.certificate")
    want = iv.wilson(120, 120)
    assert row.verdict == WEAKER and (row.ci_lo, row.ci_hi) == pytest.approx((want.lo, want.hi))
    assert row.ci_lo == pytest.approx(120 / (120 + 1.959963984540054**2))
    assert "straddles the strong threshold 0.99" in row.reason
    assert (row.n, row.unit) == (120, "(point, checkpoint) pairs")
    assert row.ci_method == "Wilson over (point, checkpoint) pairs"
    assert row.note == "120 of 120 pairs"


@pytest.mark.parametrize(
    "below, verdict",
    [(0, HOLDS), (4, WEAKER), (36, INCONCLUSIVE), (80, FAILS)],
)
def test_margin_certificate_on_wilsons_interval_over_pairs(tmp_path, below, verdict):
    """Two runs, 800 correctly classified (point, checkpoint) pairs with a certificate;
    ``below`` of them have a minimal distance (the smaller of FAB and the PGD bound) under
    the certificate. Misclassified points and points no attack reached are left out."""
    runs = dict([_margin_run(0, 4, 6, n=100), _margin_run(1, 4, 7, n=100)])
    run0 = runs["margin_mnist/margin_cnn_small/seed0"]
    pts = run0[2].copy()
    first = pts.index[:below]
    pts.loc[first, "certified_l2"] = pts.loc[first, "distance_l2"] * 1.01
    extra = pts.iloc[:2].assign(index=[100, 101], margin=[-1.0, 1.0])
    extra.loc[extra.index[1], ["fab_l2", "pgd_l2_upper", "distance_l2"]] = math.nan
    runs["margin_mnist/margin_cnn_small/seed0"] = (run0[0], run0[1], pd.concat([pts, extra]))
    df = ledger(tmp_path, default_config(margin=True), _margin_files(runs.items()))
    row = one(df, "margin", "margin.certificate")
    want = iv.wilson(800 - below, 800)
    assert row.verdict == verdict
    assert (row.ours_mean, row.ci_lo, row.ci_hi) == pytest.approx((want.center, want.lo, want.hi))
    assert row.n == 800 and row.note == f"{800 - below} of 800 pairs"
    # one value per run: the share of its pairs that hold
    assert row.ours_spread == pytest.approx(np.std([(400 - below) / 400, 1.0], ddof=1))
    if verdict == INCONCLUSIVE:
        assert "straddles the weak threshold 0.95" in row.reason
        assert "(point, checkpoint) pairs would decide (now 800" in row.reason


def test_margin_robust_rise_of_one_run_bootstraps_its_points(tmp_path):
    """The default study has one run: the robust-accuracy claims fall back to a bootstrap
    over the points of the per-point paired difference [distance > eps] at the last
    checkpoint minus the first (10 points: 4 robust at the first, 6 at the last)."""
    df = ledger(tmp_path, default_config(margin=True), _margin_files([_margin_run(0, 4, 6)]))
    row = one(df, "margin", "margin.robust_rises_train")
    per_point = [0.0] * 4 + [1.0] * 2 + [0.0] * 4
    want = iv.bootstrap_mean(per_point)
    assert (row.ours_mean, row.ci_lo, row.ci_hi) == pytest.approx((0.2, want.lo, want.hi))
    assert (row.n, row.unit, row.ci_method) == (10, "points", "bootstrap over points")


# the points a MARGIN claim reports: those its outputs hold per split and checkpoint (the
# fixtures attack 10; the config's attack_points is 200)
MARGIN_N_POINTS = 10


def test_margin_robust_rise_of_one_run_given_the_grid_radius():
    """The bootstrap path itself, on a summary that also carries ``eps_l2`` (what the claim
    reads; see the xfail above): the per-point paired differences, bootstrapped."""
    from ibrobust.claims.core import StudyContext
    from ibrobust.studies.margin.claims import robust_rise

    files = _margin_files([_margin_run(0, 4, 6)])
    summary = files[MARGIN].assign(eps_l2=files[MARGIN]["train_eps_l2"])
    ctx = StudyContext("margin", default_config()["studies"]["margin"])
    m = robust_rise("train")({"summary": summary, "points": files[MARGIN_POINTS]}, ctx)
    want = iv.bootstrap_mean([0.0] * 4 + [1.0] * 2 + [0.0] * 4)
    assert m.values == (pytest.approx(0.2),) and m.points == MARGIN_N_POINTS
    assert (m.ci().lo, m.ci().hi, m.mean) == pytest.approx((want.lo, want.hi, 0.2))
    assert m.ci().unit == "points" and m.ci().n == 10
    # a split with fewer points than attack_points (the train split of a 20-image rung) says so
    pts = files[MARGIN_POINTS]
    fewer = pts[(pts["split"] == "test") | (pts["index"] < 4)]
    m = robust_rise("train")({"summary": summary, "points": fewer}, ctx)
    assert m.points == 4 and m.ci().n == 4
    assert robust_rise("test")({"summary": summary, "points": fewer}, ctx).points == 10


# ---- malformed outputs fail loudly ---------------------------------------------------------------
def _fails(tmp_path, files: dict, where: tuple[str, str], *fragments: str, cfg=None) -> None:
    with pytest.raises(SummaryError) as err:
        ledger(tmp_path, cfg or default_config(), files)
    msg = str(err.value)
    assert str(tmp_path / where[0] / where[1]) in msg, msg
    for f in fragments:
        assert f in msg, msg


def test_swapped_radius_and_accuracy_columns_fail(tmp_path):
    df = fa_summary()
    df[["clean_acc", "critical_radius.worst"]] = df[
        ["critical_radius.worst", "clean_acc"]
    ].to_numpy()
    _fails(tmp_path, {FA: df}, FA, "column 'clean_acc'")  # NaN radii and 10.5 > 1


def test_swapped_worst_case_and_attack_columns_fail(tmp_path):
    df = fa_summary()
    cols = ["critical_radius.worst", "critical_radius.universal"]
    df[cols] = df[cols[::-1]].to_numpy()
    _fails(tmp_path, {FA: df}, FA, "'critical_radius.worst'", "must be the smallest")


def test_dropped_column_fails(tmp_path):
    _fails(tmp_path, {FA: fa_summary().drop(columns="setting")}, FA, "missing column 'setting'")
    _fails(
        tmp_path, {FA: fa_summary().drop(columns="critical_radius.worst")}, FA,
        "'critical_radius.worst'",
    )  # fmt: skip


def test_nan_where_a_claim_needs_a_value_fails(tmp_path):
    df = fa_summary()
    df.loc[(df.setting == "binary") & (df.seed == 1), "fa_index"] = float("nan")
    _fails(tmp_path, {FA: df}, FA, "fa.averaging_index", "'fa_index' is NaN")
    df = fa_summary()
    df.loc[0, "clean_acc"] = float("nan")
    _fails(tmp_path, {FA: df}, FA, "'clean_acc' has NaN")


def test_text_in_a_numeric_column_and_unknown_settings_fail(tmp_path):
    df = fa_summary().astype({"fa_index": object})
    df.loc[1, "fa_index"] = "binary"
    _fails(tmp_path, {FA: df}, FA, "'fa_index' is not numeric")
    df = fa_summary()
    df.loc[2, "setting"] = "10-class"
    _fails(tmp_path, {FA: df}, FA, "'setting' has values ['10-class']")


def test_malformed_scaling_table_fails(tmp_path):
    files = {FA: fa_summary(), FA_SCALING: fa_scaling().drop(columns="label")}
    _fails(tmp_path, files, FA_SCALING, "missing column 'label'")
    bad = fa_scaling()
    bad.loc[0, "critical_radius"] = -1.0
    _fails(tmp_path, {FA: fa_summary(), FA_SCALING: bad}, FA_SCALING, "'critical_radius'",
           "outside its valid range")  # fmt: skip


def test_malformed_images_curves_fail(tmp_path):
    cfg = default_config(fa_images=True)
    files = _images((0.8, 0.8, 0.8), (0.5, 0.5, 0.5))
    ok = files[IMAGES_CURVES]
    for bad, fragments in (
        (ok.drop(columns="robust_acc"), ("missing column 'robust_acc'",)),
        (ok.assign(robust_acc=ok.robust_acc * 2), ("'robust_acc'", "outside its valid range")),
        (ok.assign(supervision="10-class"), ("'supervision' has values ['10-class']",)),
        (ok.assign(seed=0), ("fa_images.mnist_parity@1.2", "several multiclass rows per seed")),
    ):
        _fails(tmp_path, {**files, IMAGES_CURVES: bad}, IMAGES_CURVES, *fragments, cfg=cfg)
    # the summary is still checked: a worst case above an attack
    summary = files[IMAGES].copy()
    summary["robust_acc.pgd_margin_img.mean"] = summary["robust_acc.worst.mean"] / 2
    _fails(tmp_path, {**files, IMAGES: summary}, IMAGES, "must be the smallest", cfg=cfg)


def test_malformed_price_outputs_fail(tmp_path):
    files = _price((0.08,) * 4)
    price = files[PRICE].copy()
    price[["robust_gap_mean", "robust_gap_std"]] = price[
        ["robust_gap_std", "robust_gap_mean"]
    ].to_numpy()
    _fails(tmp_path, {**files, PRICE: price}, PRICE,
           "'robust_gap_mean' is not train_robust_acc_mean")  # fmt: skip
    problems = files[PRICE_PROBLEMS]
    used = problems[
        (problems.dataset == "teacher_w4_x512")
        & (problems.optimizer == "lin_gd")
        & (problems.eps_fraction == 0.5)
    ]
    for bad, fragments in (
        (problems.drop(columns="draw"), ("missing column 'draw'",)),
        (problems.assign(test_robust_acc=1.5), ("'test_robust_acc'", "outside its valid range")),
        (
            pd.concat([problems, used.iloc[:1]]),
            ("price.gd_minus_cd", "several rows per (n, draw) for lin_gd on teacher_w4_x512"),
        ),
    ):
        _fails(tmp_path, {**files, PRICE_PROBLEMS: bad}, PRICE_PROBLEMS, *fragments)


def test_malformed_prelu_outputs_fail(tmp_path):
    summary = prelu_summary({1: (0.3,)}, {1: 0.1}, {1: (0.3, 0.5)})
    summary[["frac_single", "dist_F"]] = summary[["dist_F", "frac_single"]].to_numpy()
    _fails(tmp_path, {PRELU: summary}, PRELU, "frac_single")
    t1 = prelu_table1({1: (0.3, 0.3), 4: (0.75, 0.8, 0.7)})
    _fails(tmp_path / "a", {TABLE1: t1}, TABLE1, "prelu.mnist", "3 p=4 seeds but 2 p=1 seeds")
    t1 = prelu_table1({1: 0.3, 4: 0.75})
    _fails(tmp_path / "b", {TABLE1: t1.drop(columns="per_seed")}, TABLE1, "'per_seed'")
    _fails(tmp_path / "c", {TABLE1: t1.assign(ours=1.5)}, TABLE1, "'ours'", "valid range")


def test_malformed_margin_outputs_fail(tmp_path):
    cfg = default_config(margin=True)
    files = _margin_files([_margin_run(0, 4, 6), _margin_run(1, 4, 7)])
    summary, points = files[MARGIN], files[MARGIN_POINTS]
    # a summary from before the certificate check replaced the cross-check
    old = summary.rename(columns={"cert_frac_holding": "cc_fab_above_cert"})
    _fails(tmp_path, {**files, MARGIN: old}, MARGIN, "missing column 'cert_frac_holding'", cfg=cfg)
    for bad, fragments in (
        (points.drop(columns="run"), ("missing column 'run'",)),
        (points.assign(split="val"), ("'split' has values ['val']",)),
        (points.assign(distance_l2=-points.distance_l2), ("'distance_l2'", "valid range")),
        (points.assign(margin="x"), ("'margin' is not numeric",)),
    ):
        _fails(tmp_path, {**files, MARGIN_POINTS: bad}, MARGIN_POINTS, *fragments, cfg=cfg)


def test_margin_loss_claim_says_when_the_study_stops_before_minus_300():
    from ibrobust.claims.core import StudyContext
    from ibrobust.studies.margin.claims import loss_reached

    summary = pd.DataFrame({"run": ["a", "b"], "min_log10_loss": [-120.0, -120.5],
                            "all_finite": [1, 1]})  # fmt: skip
    stops = {"training": {"stop_log10_loss": -120.0}}
    m = loss_reached({"summary": summary}, StudyContext("margin", stops))
    assert m.values == (-120.0, -120.5)
    assert m.note == "the study stops at log10 L = -120 (training.stop_log10_loss)"
    deep = {"training": {"stop_log10_loss": -320.0}}
    assert loss_reached({"summary": summary}, StudyContext("m", deep)).note == ""
