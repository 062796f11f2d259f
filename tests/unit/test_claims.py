"""The claims ledger on hand-made study outputs (FA, FA-IMAGES, PRELU; PRICE-LIN and
PRICE-NN: test_claims_price.py; MARGIN: test_claims_margin.py): each claim reaches each
verdict its rule allows (holds / holds weaker / inconclusive / does not hold) on
hand-computed intervals, the not-applicable and not-run paths say why, and malformed outputs
fail loudly, naming the file and the column."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from claims_fixtures import (
    PRELU,
    T_975_1,
    T_975_2,
    T_975_5,
    TABLE1,
    default_config,
    fa_curve,
    fa_margin_gradient,
    fa_scaling,
    fa_summary,
    images_outputs,
    ledger,
    near_zero_ends,
    one,
    prelu_summary,
    prelu_table1,
    rows_by,
    t_ends,
    verdicts,
    write,
)

from ibrobust.analysis.ideal_radius import mixture_coordinates, prelu_radius, robust_accuracy
from ibrobust.claims import intervals as iv
from ibrobust.claims.core import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_RUN,
    WEAKER,
    Decision,
    Measurement,
    NotRun,
    Rule,
    SummaryError,
    at_least,
    at_most,
    between,
    decide,
)
from ibrobust.ledger.table import build_ledger, study_outputs, study_paths
from ibrobust.studies.prelu.measures import IDEAL_POINTS, IDEAL_SEED


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


def given(lo: float, hi: float) -> Measurement:
    """A measurement of 3 seeds whose interval is [lo, hi] (given, not a t interval)."""
    center = (lo + hi) / 2
    return Measurement((center,) * 3, interval=iv.Interval(lo, hi, center, 3, "seeds", "given"))


def test_a_strict_rule_excludes_its_direction_bound():
    """Rule.strict (a direction: "> 0"): at_least("x", 0, 0, strict=True) holds on an
    interval wholly above 0, not on one that touches 0. A tie on every unit, [0, 0], is not
    "> 0": outside the weak region (0, inf), it does not hold. [0, 0.5] reaches 0 from above:
    neither inside (0 is not > 0) nor outside (0.5 is): inconclusive, naming the threshold 0.
    [0.1, 0.5]: every value > 0: holds. The same rule without strict is ">= 0": [0, 0] and
    [0, 0.5] lie within [0, inf] and hold."""
    strict = at_least("x", 0.0, 0.0, strict=True)
    assert decide(strict, given(0.0, 0.0)) == Decision(FAILS)
    got = decide(strict, given(0.0, 0.5))
    assert got.verdict == INCONCLUSIVE
    assert got.reason == (  # on 3 seeds the end sits on 0: more than 3 would decide
        "interval [0, 0.5] straddles the weak threshold 0; about 4 seeds would decide (now 3, "
        "from the measured spread)"
    )
    assert decide(strict, given(0.1, 0.5)) == Decision(HOLDS)
    assert decide(strict, given(-0.5, -0.1)) == Decision(FAILS)
    assert strict.text() == (
        "holds: the 95 % interval of x > 0; holds weaker: > 0; does not hold: wholly outside "
        "it; else inconclusive"
    )
    loose = at_least("x", 0.0, 0.0)
    assert decide(loose, given(0.0, 0.0)) == Decision(HOLDS)
    assert decide(loose, given(0.0, 0.5)) == Decision(HOLDS)
    assert "x >= 0; holds weaker: >= 0;" in loose.text()
    # a t interval of a tie on every unit: (0, 0, 0) is [0, 0]
    assert decide(strict, Measurement((0.0, 0.0, 0.0))) == Decision(FAILS)


def test_a_strict_rule_with_a_strong_region_inside_the_direction():
    """at_least("x", 0.2, 0.0, strict=True): strong [0.2, inf) keeps its inclusive 0.2 (only
    the weak region's finite bound is exclusive), weak (0, inf). [0.2, 0.3] holds;
    [0.05, 0.3] holds weaker (straddles 0.2); [0, 0.1] touches 0: inconclusive. at_most and
    between mirror it: "< 0" fails on [0, 0]; between's weak (1, 2) open at both ends."""
    rule = at_least("x", 0.2, 0.0, strict=True)
    assert decide(rule, given(0.2, 0.3)) == Decision(HOLDS)
    assert decide(rule, given(0.05, 0.3)).verdict == WEAKER
    assert decide(rule, given(0.0, 0.1)).verdict == INCONCLUSIVE
    assert rule.text().startswith("holds: the 95 % interval of x >= 0.2; holds weaker: > 0;")
    below = at_most("d", 0.0, 0.0, strict=True)
    assert decide(below, given(0.0, 0.0)) == Decision(FAILS)
    assert decide(below, given(-0.3, -0.1)) == Decision(HOLDS)
    assert decide(below, given(-0.3, 0.0)).verdict == INCONCLUSIVE
    assert below.text().startswith("holds: the 95 % interval of d < 0; holds weaker: < 0;")
    two = between("r", (1.2, 1.8), (1.0, 2.0), strict=True)
    assert "within [1.2, 1.8]; holds weaker: within (1, 2);" in two.text()
    assert decide(two, given(1.0, 1.5)).verdict == INCONCLUSIVE  # touches 1
    assert decide(two, given(1.9, 2.0)).verdict == INCONCLUSIVE  # touches 2
    assert decide(two, given(2.0, 2.0)) == Decision(FAILS)
    assert decide(two, given(1.1, 1.5)).verdict == WEAKER


def test_a_censored_interval_lies_within_a_strict_region_open_to_infinity():
    """Rule.strict makes the weak region's *finite* bounds exclusive ("> 1"); its +inf end is
    never reached, so a censored interval (upper end +inf: a radius off the grid) is inside
    a region that is open to +inf. Values (2, 2.5, 3), t(2) = 4.303: 2.5 -+ 4.303 x 0.5 /
    sqrt 3 = 2.5 -+ 1.242, censored: [1.258, inf]."""
    m = Measurement((2.0, 2.5, 3.0), lower_bound=True)
    got = m.ci()
    assert got.lo == pytest.approx(2.5 - T_975_2 * 0.5 / math.sqrt(3)) and got.hi == math.inf
    # > 1 (strong = weak): 1.258 > 1 and nothing bounds it above: holds
    assert decide(between("ratio", (1.0, math.inf), (1.0, math.inf), strict=True), m) == (
        Decision(HOLDS)
    )
    # a finite strong region [1.89, 3.67] inside > 1: the open top leaves the strong region
    # (a lower bound says nothing of it) but not the weak one: holds weaker
    rule = between("ratio", (1.89, 3.67), (1.0, math.inf), strict=True)
    assert decide(rule, m).verdict == WEAKER
    # the same as the non-strict rule whenever the interval does not touch the bound 1
    assert decide(between("ratio", (1.89, 3.67), (1.0, math.inf)), m).verdict == WEAKER
    assert rule.text() == (
        "holds: the 95 % interval of ratio within [1.89, 3.67]; holds weaker: > 1; does not "
        "hold: wholly outside it; else inconclusive"
    )


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
    with pytest.raises(ValueError, match="2 labels for 3 values"):
        Measurement((1.0, 2.0, 3.0), labels=("seed 0", "seed 1"))


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
FA_CURVE = ("fa", "figures/robust_accuracy_vs_radius.csv")
SWEEP = "scaling sweep over d, 2-class nets"
# the sweep's nets decomposed: each column = intercept + slope ln d (seed 1: intercept + 0.1)
LAMBDAS = {"other_class_ratio": (0.8, -0.05), "fa_index": (0.7, 0.01),
           "decoupling_ratio": (0.5, -0.02)}  # fmt: skip
FA_TAG = "clusters_d1000 (d=1000, k=10)"


def direct_gd(n_train: int = 500) -> dict:
    """config.yaml with Study FA's GD training the weights themselves (method: direct) on
    ``n_train`` points, so the span-residual lemma is testable: under method: gram it is
    not applicable, nor where the k features and the n noises span R^d (n + k >= d; the
    default clusters_d1000 has n = 1000, k = 10, d = 1000)."""
    cfg = default_config()
    cfg["optimizers"]["gd"]["method"] = "direct"
    cfg["datasets"]["clusters_d1000"]["n_train"] = n_train
    return cfg


def test_fa_counts_the_points_the_attacks_ran_on(tmp_path):
    """The config asks for 1000 attacked points; the runs' attacks ran on 40 (a smaller test
    split): the ledger reports the measured 40, not the config's 1000."""
    files = {FA: fa_summary(n_points=40), FA_SCALING: fa_scaling(), FA_MARGIN: fa_margin_gradient(),
             FA_CURVE: fa_curve(n=40)}  # fmt: skip
    cfg = direct_gd()
    assert cfg["studies"]["fa"]["attack_points"] == 1000
    row = one(ledger(tmp_path, cfg, files), "fa", "fa.binary_radius")
    assert (row.n, row.points) == (3, 40)


def test_fa_claims_hold_on_a_feature_averaging_study(tmp_path):
    """The fixture's default study, every claim hand-computed (3 seeds, t(2) = 4.303;
    d = 1000, k = 10: sqrt(d/k) = 10, sqrt(d) = 31.6; n = 500 training points, so
    n + k < d and the span residual is judged)."""
    files = {FA: fa_summary(), FA_SCALING: fa_scaling(lambdas=LAMBDAS),
             FA_MARGIN: fa_margin_gradient(), FA_CURVE: fa_curve()}  # fmt: skip
    df = ledger(tmp_path, direct_gd(), files)
    # 2-class near-zero radii (9, 9.5, 8.5) / 10: 0.9 +- 4.303 x 0.05 / sqrt 3 = [0.776,
    # 1.024], widened by the grid brackets (8-9, 9-10, 8-9: to the means 0.833 and 0.933) to
    # [0.709, 1.058]: under the idealised net's 10 % point 1.1 x (1 + 1.2816 x 0.1) = 1.241;
    # the weak region ends below fa.reference_radius's strong region 0.4 sqrt(10) = 1.265
    row = one(df, "fa", "fa.binary_radius")
    assert row.verdict == HOLDS and row.name == FA_TAG
    assert (row.ci_lo, row.ci_hi) == pytest.approx(near_zero_ends((9.0, 9.5, 8.5), T_975_2))
    assert (row.ci_lo, row.ci_hi) == pytest.approx((0.709, 1.058), abs=1e-3)
    assert (row.strong_lo, row.strong_hi, row.weak_lo, row.weak_hi) == (0.0, 1.241, 0.0, 1.265)
    assert (row.n, row.unit, row.points) == (3, "seeds", 1000)
    assert row.ci_method.startswith("t over seeds + read-off the radius grid")
    # universal radius 10 on every seed: [1, 1] inside the theory's 1 +- 10 %
    row = one(df, "fa", "fa.universal_radius")
    assert row.verdict == HOLDS and (row.ci_lo, row.ci_hi) == (1.0, 1.0)
    # the reference robust on the whole grid: its top 32 / sqrt(1000) = 1.012, a lower bound
    row = one(df, "fa", "fa.reference_radius")
    assert row.verdict == HOLDS and row.lower_bound and row.ci_hi == math.inf
    assert row.ci_lo == pytest.approx(32 / math.sqrt(1000))
    assert one(df, "fa", "fa.clean_accuracy").verdict == HOLDS  # 1.0 each: [1, 1] >= 0.9
    # the d-trend claims, on the sweep's final checkpoints (2 seeds x 4 d, slopes exact):
    # other-class ratio -0.05 per ln d (< 0), fa_index +0.01 (>= 0, and > 0 for the earlier
    # talk's 1 +- o(1)), the k-class decoupling ratio -0.02 (< 0)
    for id_, setting, slope in (
        ("fa.other_class_small", SWEEP, -0.05),
        ("fa.averaging_index", SWEEP, 0.01),
        ("fa.averaging_index_csml", SWEEP + " (earlier talk)", 0.01),
        ("fa.decoupling_index", "scaling sweep over d, k-class nets", -0.02),
    ):
        row = one(df, "fa", id_)
        assert (row.verdict, row.name, row.form) == (HOLDS, setting, "asymptotic"), id_
        assert (row.ci_lo, row.ci_hi) == pytest.approx((slope, slope)), id_
        assert (row.n, row.unit) == (8, "(d, seed) pairs"), id_
    # cosines (0.44, 0.45, 0.43) x sqrt(5): [0.928, 1.039], >= 0.9 (w proportional to the
    # class's feature sum gives 1, less 10 %; one-sided: the mean same-class cosine x
    # sqrt(k/2) cannot exceed 1 for orthogonal features)
    row = one(df, "fa", "fa.cosine_blocks")
    cos = [c * math.sqrt(5) for c in (0.44, 0.45, 0.43)]
    assert row.verdict == HOLDS and (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(cos, T_975_2))
    assert (row.strong_lo, row.strong_hi, row.weak_lo, row.weak_hi) == (
        0.9, math.inf, 0.72, math.inf,
    )  # fmt: skip
    # residual 1e-5 on all six trained nets (2-class and k-class): one value per run; n + k
    # = 510 < d = 1000: the span is a proper subspace, the lemma is tested
    row = one(df, "fa", "fa.span_residual")
    assert row.verdict == HOLDS and (row.n, row.unit) == (6, "runs")
    # first-order distance ratios (13.4/12, 14/12.5, 12.9/11.5) around sqrt(k/8) = 1.118:
    # [1.113, 1.126] inside [1.006, 1.23]
    row = one(df, "fa", "fa.gradient_per_margin")
    ratios = (13.4 / 12, 14 / 12.5, 12.9 / 11.5)
    assert row.verdict == HOLDS and (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(ratios, T_975_2))
    assert verdicts(df, "fa", "fa.scaling_slope") == [HOLDS]  # -0.5 exactly on both seeds
    assert verdicts(df, "fa", "fa.scaling_slope_d") == [HOLDS]
    # k-class / 2-class (25/9, 26/9.5, 24/8.5) = [2.672, 2.887]: > 1 under every readout,
    # past the argmax readout's idealised sqrt(k/2) = 2.236 +- 10 % = [2.01, 2.46]: weaker
    # there; the source states the direction only (strong = weak, > 1; the project's cap
    # sqrt(2k/(k+2)) = 1.291 for the sum readout is not a rule)
    got = {k: r.verdict for k, r in rows_by(df, "fa", "fa.kclass_over_binary").items()}
    assert got == {"readout sum": HOLDS, "readout argmax": WEAKER, "readout log_odds": HOLDS}
    # the k-class argmax accuracy: the fixture's summary has no fine_acc column
    row = one(df, "fa", "fa.kclass_clean_accuracy")
    assert row.verdict == NOT_RUN and "no 'fine_acc'" in row.reason


@pytest.mark.parametrize(
    "multiclass, expected",
    [
        # ratios 2.2, 2.25, 2.15: [2.076, 2.324]: > 1 (sum, log_odds: strong = weak), inside
        # the argmax readout's sqrt(k/2) +- 10 % = [2.01, 2.46]
        ((22.0, 22.5, 21.5), {"sum": HOLDS, "argmax": HOLDS, "log_odds": HOLDS}),
        # ratios 2.5, 2.6, 2.4: [2.252, 2.748]: straddles the argmax readout's 2.46: weaker
        ((25.0, 26.0, 24.0), {"sum": HOLDS, "argmax": WEAKER, "log_odds": HOLDS}),
        # 1.15 +- 0.124 = [1.026, 1.274]: > 1; below the argmax readout's 2.01: weaker there
        ((11.5, 12.0, 11.0), {"sum": HOLDS, "argmax": WEAKER, "log_odds": HOLDS}),
        # 1.2 +- 0.124 = [1.076, 1.324]: past the project's sum cap 1.291, which is no longer
        # a rule (the source states the direction only): the sum readout holds
        ((12.0, 12.5, 11.5), {"sum": HOLDS, "argmax": WEAKER, "log_odds": HOLDS}),
        # 1.1 +- 0.497 = [0.603, 1.597] straddles 1 under every readout
        ((9.0, 13.0, 11.0), dict.fromkeys(("sum", "argmax", "log_odds"), INCONCLUSIVE)),
        # a tie on every seed: [1, 1] is not > 1 (strict): outside (1, inf), does not hold
        ((10.0, 10.0, 10.0), dict.fromkeys(("sum", "argmax", "log_odds"), FAILS)),
        ((7.0, 7.5, 6.5), dict.fromkeys(("sum", "argmax", "log_odds"), FAILS)),  # [0.58, 0.82]
    ],
)
def test_fa_kclass_over_binary_per_readout(tmp_path, multiclass, expected):
    files = {FA: fa_summary(binary=(10.0, 10.0, 10.0), multiclass=multiclass)}
    rows = rows_by(ledger(tmp_path, default_config(), files), "fa", "fa.kclass_over_binary")
    ratios = [m / 10 for m in multiclass]
    assert {k.removeprefix("readout "): r.verdict for k, r in rows.items()} == expected
    for r in rows.values():  # the same numbers under each readout, the rule differs
        assert r.ours_mean == pytest.approx(sum(ratios) / 3)
        assert r.ours_spread == pytest.approx(pd.Series(ratios).std())
        assert (r.ci_lo, r.ci_hi) == pytest.approx(t_ends(ratios, T_975_2))
        assert (r.n, r.unit, r.points, r.ci_method) == (3, "seeds", 1000, "t over seeds")
        assert not r.lower_bound
    rules = {k: (r.strong_lo, r.strong_hi, r.weak_lo, r.weak_hi) for k, r in rows.items()}
    assert rules == {
        "readout sum": (1.0, math.inf, 1.0, math.inf),
        "readout argmax": (2.01, 2.46, 1.0, math.inf),
        "readout log_odds": (1.0, math.inf, 1.0, math.inf),
    }
    # the direction's bound is exclusive (Rule.strict): the rule's words say "> 1"
    assert rows["readout sum"].rule.startswith("holds: the 95 % interval of ratio > 1; holds "
                                               "weaker: > 1;")  # fmt: skip
    assert "within [2.01, 2.46]; holds weaker: > 1;" in rows["readout argmax"].rule
    if expected["sum"] == INCONCLUSIVE:
        assert rows["readout sum"].reason == (
            "interval [0.603, 1.6] straddles the weak threshold 1; about 18 seeds would decide "
            "(now 3, from the measured spread)"
        )
    if multiclass[0] == 12.0:  # [1.076, 1.324]: no bound straddled under either readout
        assert rows["readout sum"].reason == "" and rows["readout argmax"].reason == ""


def test_fa_kclass_over_binary_censored_under_the_strict_direction(tmp_path):
    """A k-class net robust on the whole grid on seed 0 (NaN: the grid's top, 32): ratios
    (3.2, 3.0, 2.8) over the 2-class 10, a lower bound: 3.0 -+ 4.303 x 0.2 / sqrt 3 =
    [2.503, inf]. Every readout's weak region is "> 1" (strict, open to +inf): the censored
    interval lies in it. Sum and log_odds (strong = weak): holds; argmax (strong [2.01,
    2.46], which an unbounded interval cannot lie in): holds weaker, with no bound inside the
    interval to name."""
    files = {FA: fa_summary(binary=(10.0,) * 3, multiclass=(math.nan, 30.0, 28.0))}
    rows = rows_by(ledger(tmp_path, default_config(), files), "fa", "fa.kclass_over_binary")
    assert {k: r.verdict for k, r in rows.items()} == {
        "readout sum": HOLDS, "readout argmax": WEAKER, "readout log_odds": HOLDS,
    }  # fmt: skip
    for r in rows.values():
        assert r.lower_bound and r.ci_hi == math.inf
        assert r.ci_lo == pytest.approx(t_ends((3.2, 3.0, 2.8), T_975_2)[0])
    assert rows["readout argmax"].reason == ""


@pytest.mark.parametrize(
    "zero, verdict",
    [
        # the radii where the worst case leaves 10 % robust, / sqrt(d/k) = 10, widened by the
        # grid brackets: (9, 9.5, 8.5): [0.709, 1.058], under the idealised net's 1.241
        ((9.0, 9.5, 8.5), HOLDS),
        # (11, 11.5, 10.5): 1.1 +- 0.124 widened (brackets 10-11, 11-12, 10-11) to [0.909,
        # 1.258]: over 1.241 in part, under the weak 1.265 (the robust reference's strong
        # region 0.4 sqrt(d) = 0.4 sqrt(10) x sqrt(d/k))
        ((11.0, 11.5, 10.5), WEAKER),
        ((12.0, 12.5, 11.5), INCONCLUSIVE),  # [1.009, 1.358] straddles 1.265
        ((20.0, 22.0, 18.0), FAILS),  # [1.303, 2.497]: where the robust reference holds
        # never down to 10 % on the grid: the grid's top 32 / 10, a lower bound
        ((math.nan,) * 3, FAILS),
    ],
)
def test_fa_binary_radius_is_the_near_zero_radius_under_the_idealised_bound(
    tmp_path, zero, verdict
):
    files = {FA: fa_summary(universal=(30.0,) * 3), FA_CURVE: fa_curve(zero=zero)}
    row = one(ledger(tmp_path, default_config(), files), "fa", "fa.binary_radius")
    assert row.verdict == verdict
    assert (row.strong_lo, row.strong_hi, row.weak_lo, row.weak_hi) == (0.0, 1.241, 0.0, 1.265)
    if math.isnan(zero[0]):
        assert row.lower_bound and row.ci_hi == math.inf and row.ci_lo == pytest.approx(3.2)
        return
    assert (row.ci_lo, row.ci_hi) == pytest.approx(near_zero_ends(zero, T_975_2))
    if verdict == INCONCLUSIVE:
        assert row.reason.startswith("interval [1.01, 1.36] straddles the weak threshold 1.26;")
    if verdict == WEAKER:
        assert row.reason.startswith("interval [0.909, 1.26] straddles the strong threshold 1.24")


def test_fa_binary_radius_ignores_the_50_percent_point(tmp_path):
    """The summary's critical radius (the 50 % point) no longer enters fa.binary_radius: a
    2-class net whose 50 % point is far out but whose curve is near zero by 9 holds."""
    files = {FA: fa_summary(binary=(25.0,) * 3, universal=(30.0,) * 3), FA_CURVE: fa_curve()}
    assert one(ledger(tmp_path, default_config(), files), "fa", "fa.binary_radius").verdict == HOLDS
    row = one(
        ledger(tmp_path / "b", default_config(), {FA: fa_summary()}), "fa", "fa.binary_radius"
    )
    assert row.verdict == NOT_RUN and "robust_accuracy_vs_radius.csv" in row.reason


def test_fa_feature_claims_weaker_and_failing(tmp_path):
    files = {
        FA: fa_summary(
            universal=(10.5, 10.0, 9.5),  # 1.0 +- 0.124 straddles 1.1: weaker
            clean=(0.8, 0.85, 0.75),  # [0.676, 0.924] straddles 0.9, over 0.5: weaker
            cosine_binary=(0.36, 0.36, 0.36),  # 0.36 sqrt 5 = 0.805: >= 0.72, not >= 0.9
        ),
        # the sweep's ratios rising with d, the index falling (exact slopes per seed)
        FA_SCALING: fa_scaling(lambdas={"other_class_ratio": (0.1, 0.05),
                                        "fa_index": (0.9, -0.05),
                                        "decoupling_ratio": (0.1, 0.02)}),
    }  # fmt: skip
    df = ledger(tmp_path, default_config(), files)
    got = {
        id_: one(df, "fa", id_).verdict
        for id_ in ("fa.universal_radius", "fa.clean_accuracy", "fa.averaging_index",
                    "fa.averaging_index_csml", "fa.other_class_small", "fa.decoupling_index",
                    "fa.cosine_blocks")
    }  # fmt: skip
    assert got == {
        "fa.universal_radius": WEAKER,
        "fa.clean_accuracy": WEAKER,
        "fa.averaging_index": FAILS,  # -0.05 per ln d: falling
        "fa.averaging_index_csml": FAILS,
        "fa.other_class_small": FAILS,  # +0.05: rising
        "fa.decoupling_index": FAILS,  # +0.02: rising
        "fa.cosine_blocks": WEAKER,
    }
    row = one(df, "fa", "fa.universal_radius")
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((1.05, 1.0, 0.95), T_975_2))
    assert "straddles the strong threshold 0.9" in row.reason  # [0.876, 1.124]: both; 0.9 first
    row = one(df, "fa", "fa.cosine_blocks")
    assert (row.ci_lo, row.ci_hi) == pytest.approx((0.36 * math.sqrt(5),) * 2)
    # seeds whose slopes disagree (-0.05 and +0.03 per ln d): the pooled slope -0.01 with an
    # interval across 0: inconclusive; a flat index (slope 0 on both seeds: [0, 0]) is >= 0
    # (not falling: the ICLR statement holds) but not > 0 (the earlier talk's does not)
    sweep = fa_scaling(lambdas={"other_class_ratio": (0.8, (-0.05, 0.03)), "fa_index": (0.5, 0.0)})
    sweep.loc[sweep.key == "d", "other_class_ratio"] += np.where(
        sweep.loc[sweep.key == "d", "d"] == 500, 0.01, 0.0
    )  # a little scatter, so the pooled fit has residuals
    df = ledger(tmp_path, default_config(), {FA: fa_summary(), FA_SCALING: sweep})
    assert verdicts(df, "fa", "fa.other_class_small") == [INCONCLUSIVE]
    assert verdicts(df, "fa", "fa.averaging_index") == [HOLDS]
    assert verdicts(df, "fa", "fa.averaging_index_csml") == [FAILS]
    assert verdicts(df, "fa", "fa.decoupling_index") == [NOT_RUN]  # no k-class column
    # the cosine rule is one-sided: 0.5 sqrt 5 = 1.118 on every seed, past the theory's 1,
    # is >= 0.9: holds (no upper end)
    df = ledger(tmp_path, default_config(), {FA: fa_summary(cosine_binary=(0.5, 0.5, 0.5))})
    row = one(df, "fa", "fa.cosine_blocks")
    assert row.verdict == HOLDS and row.ci_lo == pytest.approx(0.5 * math.sqrt(5))


def test_fa_span_residual_is_not_applicable_to_gram_space_gd(tmp_path):
    """config.yaml's GD keeps W(t) = W(0) + A(t) X (method: gram): in the span by
    construction, whatever the residual column says. Judged only where the span is a proper
    subspace: the k features and n noise vectors span R^d when n + k >= d."""
    # config.yaml's clusters_d1000: k + n = 10 + 1000 = 1010 >= d = 1000: every weight
    # vector is in the span, whichever way GD trains (this reason comes first)
    for cfg in (default_config(), direct_gd(n_train=1000)):
        row = one(ledger(tmp_path, cfg, {FA: fa_summary(residual=0.5)}), "fa", "fa.span_residual")
        assert row.verdict == NOT_APPLICABLE
        assert row.reason == (
            "the features and the training noises (k + n = 1010 vectors in d = 1000 "
            "dimensions) span the whole input space, so every weight vector is in their span: "
            "a study with n + k < d tests the lemma"
        )
        assert math.isnan(row.ours_mean) and row.n == 0 and row.fragile == ""
    # n + k = 990 + 10 = 1000 = d: still the whole space (k + n >= d)
    row = one(ledger(tmp_path, direct_gd(n_train=990), {FA: fa_summary()}), "fa",
              "fa.span_residual")  # fmt: skip
    assert row.verdict == NOT_APPLICABLE and "k + n = 1000 vectors in d = 1000" in row.reason
    # n = 500 (k + n = 510 < 1000) under method: gram: in the span by construction
    cfg = direct_gd()
    cfg["optimizers"]["gd"]["method"] = "gram"
    row = one(ledger(tmp_path, cfg, {FA: fa_summary(residual=0.5)}), "fa", "fa.span_residual")
    assert row.verdict == NOT_APPLICABLE
    assert row.reason.startswith("optimizer 'gd' trains in the span of the inputs by construction")
    assert "method: direct tests the lemma" in row.reason
    # n = 989 (k + n = 999 < d) and GD on the weights themselves: judged (5e-3 on every run:
    # under 1e-2, over 1e-3)
    df = ledger(tmp_path, direct_gd(n_train=989), {FA: fa_summary(residual=5e-3)})
    assert verdicts(df, "fa", "fa.span_residual") == [WEAKER]
    df = ledger(tmp_path, direct_gd(), {FA: fa_summary(residual=0.05)})
    assert verdicts(df, "fa", "fa.span_residual") == [FAILS]
    # sign descent (kind gd, norm linf: configs/cross_paper.yaml's fa_sign) and robust ERM
    # train by autograd whatever their method says: the lemma is tested
    for change in ({"norm": "linf", "scale": "unit"}, {"adversarial": {"eps": 4.0, "norm": "l2"}}):
        cfg = direct_gd()
        cfg["optimizers"]["gd"].update(change, method="gram")
        df = ledger(tmp_path, cfg, {FA: fa_summary(residual=5e-3)})
        assert verdicts(df, "fa", "fa.span_residual") == [WEAKER], change


def test_fa_columns_an_older_summary_lacks_are_not_run(tmp_path):
    summary = fa_summary().drop(columns=["critical_radius.universal"])
    files = {FA: summary, FA_CURVE: fa_curve(), FA_SCALING: fa_scaling()}
    df = ledger(tmp_path, default_config(), files)
    row = one(df, "fa", "fa.universal_radius")
    assert (row.verdict, row.reason) == (NOT_RUN, "the universal-direction attack was not run")
    assert one(df, "fa", "fa.binary_radius").verdict == HOLDS
    # the sweep's table without the decomposition's columns (the sweep's nets not decomposed):
    # the d-trend claims are not run, naming what is missing; the base cell's numbers are
    # shown as diagnostics: the along-training slopes (-0.05, -0.04, -0.06) and the final
    # 2-class fa_index (0.95, 0.97, 0.96)
    row = one(df, "fa", "fa.other_class_small")
    assert row.verdict == NOT_RUN and "records no 'other_class_ratio'" in row.reason
    assert (
        "decompose" in row.reason
        and "at the base d = 1000 alone (shown, not judged): -0.05" in row.reason
    )
    row = one(df, "fa", "fa.averaging_index")
    assert row.verdict == NOT_RUN and "(shown, not judged): 0.96 (3 seeds)" in row.reason
    row = one(df, "fa", "fa.decoupling_index")
    assert row.verdict == NOT_RUN and "records no 'decoupling_ratio'" in row.reason


def test_fa_censored_reference_radius_has_no_upper_end(tmp_path):
    # one seed off the grid, two at radius 2: (1.012, 0.063, 0.063), mean 0.379; the lower
    # end -0.98 straddles 1/sqrt(k) = 0.316, and more seeds (not a larger grid) can lift it
    df = ledger(tmp_path, default_config(), {FA: fa_summary(reference=(math.nan, 2.0, 2.0))})
    ref = one(df, "fa", "fa.reference_radius")
    values = (32 / math.sqrt(1000), 2 / math.sqrt(1000), 2 / math.sqrt(1000))
    assert ref.verdict == INCONCLUSIVE and ref.lower_bound and ref.ci_hi == math.inf
    assert ref.ci_lo == pytest.approx(t_ends(values, T_975_2)[0])
    assert ref.ci_method == "t over seeds, censored above"
    assert ref.reason.startswith("interval [-0.981, inf] straddles the weak threshold 0.316; about")
    assert ref.reason.endswith("seeds would decide (now 3, from the measured spread)")
    # radius 12 on every seed: 0.379, under the weak 0.316? no: over it, under 0.4: weaker
    df = ledger(tmp_path, default_config(), {FA: fa_summary(reference=(12.0,) * 3)})
    assert verdicts(df, "fa", "fa.reference_radius") == [WEAKER]


def pooled_half(slopes) -> float:
    """Half-width of the 95 % interval of the slope common to two seeds whose log radii are
    c_i + s_i x on the same x, an intercept per seed (8 pairs, 8 - 2 - 1 = 5 df): the
    common slope is the mean slope, the residuals (s_i - mean)(x - mean x), so SSR = 2 d^2
    Sxx1 (d = |s_0 - s_1| / 2, Sxx1 = sum (x - mean x)^2) over Sxx = 2 Sxx1: SE = d / sqrt(5),
    whatever x is."""
    d = abs(slopes[0] - slopes[1]) / 2
    return T_975_5 * d / math.sqrt(5)


@pytest.mark.parametrize(
    "slopes, verdict, fragile",
    [
        ((-0.48, -0.52), HOLDS, False),  # -0.5 +- 0.023; each seed alone holds too
        ((-0.17, -0.23), WEAKER, False),  # -0.2 +- 0.034: under 0, not in [-0.55, -0.45]
        ((-0.05, -0.95), INCONCLUSIVE, True),  # -0.5 +- 0.517 straddles 0; alone: weaker
        ((0.1, 0.12), FAILS, False),  # [0.099, 0.121]: the radius grows with k
    ],
)
def test_fa_scaling_slope_on_the_pooled_slope_interval(tmp_path, slopes, verdict, fragile):
    """Two seeds, each a power law over k = 2, 4, 10, 20 with its own slope."""
    files = {FA: fa_summary(), FA_SCALING: fa_scaling(slope=slopes)}
    row = one(ledger(tmp_path, default_config(), files), "fa", "fa.scaling_slope")
    mean, half = sum(slopes) / 2, pooled_half(slopes)
    assert row.verdict == verdict
    assert (row.ours_mean, row.ci_lo, row.ci_hi) == pytest.approx(
        (mean, mean - half, mean + half), abs=1e-9
    )
    method = "t of the pooled OLS slope, an intercept per group"
    assert (row.n, row.unit, row.ci_method) == (8, "(k, seed) pairs", method)
    assert row.ours_spread == pytest.approx(abs(slopes[0] - slopes[1]) / math.sqrt(2))
    assert row.note == "2 seeds' slopes " + ", ".join(f"{s:.3f}" for s in slopes)
    # leaving a seed out refits on the other seed's four points (an exact power law: a
    # zero-width interval at its own slope)
    assert row.fragile is fragile
    if fragile:
        assert row.fragile_reason == "without seed 0: holds weaker; without seed 1: holds weaker"


def test_fa_scaling_slope_d_and_values_off_the_grid(tmp_path):
    scaling = fa_scaling(slope_d=(0.49, 0.51))
    df = ledger(tmp_path, default_config(), {FA: fa_summary(), FA_SCALING: scaling})
    row = one(df, "fa", "fa.scaling_slope_d")
    half = pooled_half((0.49, 0.51))
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
    # a study without a scaling sweep: not run, saying so
    cfg = default_config()
    cfg["studies"]["fa"]["scaling"] = None
    row = one(ledger(tmp_path, cfg, {FA: fa_summary()}), "fa", "fa.scaling_slope_d")
    assert (row.verdict, row.reason) == (NOT_RUN, "the study has no scaling sweep")


def test_fa_gradient_per_margin_weaker(tmp_path):
    files = {FA: fa_summary(), FA_MARGIN: fa_margin_gradient(reference=(15.0, 15.5, 14.5))}
    row = one(ledger(tmp_path, default_config(), files), "fa", "fa.gradient_per_margin")
    ratios = (15 / 12, 15.5 / 12.5, 14.5 / 11.5)
    assert row.verdict == WEAKER  # [1.224, 1.277]: over 1, straddles 1.23
    assert "straddles the strong threshold 1.23" in row.reason
    assert row.ours_mean == pytest.approx(sum(ratios) / 3)
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(ratios, T_975_2))


def test_readouts_the_summary_does_not_have_are_not_run(tmp_path):
    cfg = default_config()
    cfg["studies"]["fa"]["readouts"] = ["sum", "argmax"]
    kw = dict(binary=(10.0, 10.0, 10.0), multiclass=(11.5, 12.0, 11.0))
    df = ledger(tmp_path, cfg, {FA: fa_summary(readouts=None, **kw)})
    rows = rows_by(df, "fa", "fa.kclass_over_binary")
    assert {k: r.verdict for k, r in rows.items()} == {
        "readout sum": HOLDS,  # [1.026, 1.274] > 1
        "readout argmax": NOT_RUN,
    }
    assert "no 'readout' column" in rows["readout argmax"].reason
    # with a readout column, each readout is judged on its own rows
    summary = fa_summary(readouts=None, **kw)
    argmax = summary[summary.setting == "multiclass"].assign(**{
        "critical_radius.worst": 25.0, "critical_radius.pgd_margin": 25.0,
        "critical_radius.pgd_ce": 37.5, "critical_radius.universal": 30.0,
        # its refined radius (the fixture's exact brackets) moves with it
        "critical_radius.worst.refined": 25.0, "critical_radius.worst.lo": 25.0,
        "critical_radius.worst.hi": 25.0,
    })  # fmt: skip
    summary = pd.concat([summary.assign(readout="sum"), argmax.assign(readout="argmax")])
    rows = rows_by(ledger(tmp_path, cfg, {FA: summary}), "fa", "fa.kclass_over_binary")
    assert {k: r.verdict for k, r in rows.items()} == {
        "readout sum": HOLDS,
        "readout argmax": WEAKER,  # 2.5 on every seed: > 1, past sqrt(5) +- 10 % = [2.01, 2.46]
    }
    assert rows["readout argmax"].ours_mean == pytest.approx(2.5)


def test_not_run_reasons(tmp_path):
    cfg = default_config(fa_images=False)
    df = ledger(tmp_path, cfg, {FA: fa_summary()}).reset_index()
    images = df[df.study == "fa_images"]
    assert len(images) == 4 * 3 and set(images.verdict) == {NOT_RUN}  # x 3 readouts
    assert set(images.reason) == {"study disabled (enabled: false)"}
    scaling = df[df.id == "fa.scaling_slope"].iloc[0]
    assert scaling.verdict == NOT_RUN and "critical_radius_scaling.csv" in scaling.reason
    mnist = df[df.id.str.startswith(("prelu.mnist", "prelu.parity"))]
    assert len(mnist) == 12 and all("table1.csv" in r for r in mnist.reason)
    assert (df[df.study == "price_linear"].verdict.isin([NOT_RUN, NOT_APPLICABLE])).all()
    # a not-run row has no number: no interval, no units, no fragility
    assert images.ours_mean.isna().all() and images.ci_lo.isna().all()
    assert (images.n == 0).all() and (images.points == 0).all() and (images.ci_method == "").all()
    assert (images.fragile == "").all() and (images.fragile_reason == "").all()


def test_only_the_files_this_build_provides_count(tmp_path):
    cfg = default_config()
    write(tmp_path, *FA, fa_summary())
    write(tmp_path, *FA_CURVE, fa_curve())
    stale = write(tmp_path, *FA_SCALING, fa_scaling())
    paths = study_paths("feature_averaging", "fa", tmp_path)
    df = build_ledger(study_outputs(cfg, tmp_path, provided=[paths["summary"], paths["curve"]]))
    row = df[df.id == "fa.scaling_slope"].iloc[0]
    assert row.verdict == NOT_RUN and str(stale) in row.reason
    assert df[df.id == "fa.binary_radius"].iloc[0].verdict == HOLDS


def test_fa_claims_per_trained_net_when_a_study_has_several(tmp_path):
    """fa_prelu trains two nets per dataset (p = 1 and 3): one row set per net, each computed
    on that net's rows (and the shared reference's), not a failure on duplicated seeds."""
    cfg = default_config()
    cfg["studies"]["fa"]["models"] = ["two_layer_m5", "prelu_p1"]
    strong = fa_summary(binary=(10.0, 10.0, 10.0), multiclass=(25.0, 26.0, 24.0))
    weak = fa_summary(multiclass=(7.0, 7.5, 6.5), binary=(10.0, 10.0, 10.0))
    weak = weak.query("setting != 'robust reference'")
    both = pd.concat([strong, weak.assign(model="prelu_p1")], ignore_index=True)
    rows = ledger(tmp_path, cfg, {FA: both}).loc[("fa", "fa.kclass_over_binary")]
    by_net = {}
    for s, v in zip(rows.index, rows.verdict, strict=True):
        by_net.setdefault(s.rsplit(", ", 2)[1], []).append(v)
    # two_layer_m5: ratios (2.5, 2.6, 2.4) = [2.252, 2.748], > 1 under every readout, across
    # the argmax readout's 2.46: weaker there; prelu_p1: [0.58, 0.82] < 1: fails
    assert by_net == {"two_layer_m5": [WEAKER, HOLDS, HOLDS], "prelu_p1": [FAILS] * 3}
    means = {s.rsplit(", ", 2)[1]: m for s, m in zip(rows.index, rows.ours_mean, strict=True)}
    assert means == {"two_layer_m5": pytest.approx(2.5), "prelu_p1": pytest.approx(0.7)}
    # the reference is shared: both nets' reference rows see its three seeds
    df = ledger(tmp_path, cfg, {FA: both})
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


def resnet18_images() -> dict:
    """config.yaml with FA-IMAGES enabled and training the paper's architecture (ResNet-18):
    the figure's magnitudes are a rule for the sum readout only there."""
    cfg = default_config(fa_images=True)
    cfg["studies"]["fa_images"]["models"] = ["resnet18"]
    return cfg


@pytest.mark.parametrize(
    "multi, binary, small, sum_resnet, other",
    [
        # 0.30 +- 4.303 x 0.02 / sqrt 3 = [0.250, 0.350]: > 0, and >= 0.17
        ((0.80, 0.82, 0.78), (0.50, 0.50, 0.50), HOLDS, HOLDS, HOLDS),
        # 0.15 +- 0.050 = [0.100, 0.200]: > 0; straddles ResNet-18's 0.17
        ((0.70, 0.72, 0.68), (0.55, 0.55, 0.55), HOLDS, WEAKER, HOLDS),
        # (0.1, -0.05, 0.05): 0.033 +- 0.19 straddles 0
        ((0.60, 0.50, 0.55), (0.50, 0.55, 0.50), INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE),
        # a tie on every seed: [0, 0] is not > 0 (strict): does not hold
        ((0.50, 0.50, 0.50), (0.50, 0.50, 0.50), FAILS, FAILS, FAILS),
        ((0.50, 0.50, 0.50), (0.60, 0.61, 0.59), FAILS, FAILS, FAILS),  # -0.10 +- 0.025
    ],
)
def test_fa_images_claims_on_per_seed_differences(tmp_path, multi, binary, small, sum_resnet,
                                                  other):  # fmt: skip
    """config.yaml's FA-IMAGES trains a small CNN: the figure's numbers are ResNet-18's and
    do not transfer, so every readout is judged on the direction, > 0 (strict: a tie does
    not hold). With ResNet-18 the sum readout (the figure's) is judged against the
    figure's gap within its reading, 0.80 - 0.58 - (0.025 + 0.025) = 0.17 at MNIST radius
    1.2; the other readouts still against the direction."""
    diffs = [m - b for m, b in zip(multi, binary, strict=True)]
    for cfg, sum_verdict, strong in (
        (default_config(fa_images=True), small, 0.0),
        (resnet18_images(), sum_resnet, 0.17),
    ):
        df = ledger(tmp_path, cfg, _images(multi, binary))
        rows = rows_by(df, "fa_images", "fa_images.mnist_parity@1.2")
        assert {k: r.verdict for k, r in rows.items()} == {
            "readout sum": sum_verdict, "readout argmax": other, "readout log_odds": other,
        }  # fmt: skip
        row = rows["readout sum"]
        # (the per-run tables hold float32 accuracies, as the attack jobs write them)
        assert row.ours_mean == pytest.approx(sum(diffs) / 3, abs=1e-6)
        assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends(diffs, T_975_2), abs=1e-6)
        # the points the attacks ran on (the curves' n), not the config's attack_points 500
        assert (row.n, row.unit, row.points) == (3, "seeds", 100)
        assert (row.strong_lo, row.weak_lo) == (strong, 0.0)
        assert (rows["readout argmax"].strong_lo, rows["readout argmax"].weak_lo) == (0.0, 0.0)
        assert row.note == f"k-class {sum(multi) / 3:.3f} vs 2-class {sum(binary) / 3:.3f}"
        if sum_verdict == WEAKER:
            assert "straddles the strong threshold 0.17" in row.reason
        if sum_verdict == INCONCLUSIVE:
            assert "straddles the weak threshold 0" in row.reason
            assert "seeds would decide" in row.reason
    # the rule's words: "> 0" for the direction; ">= 0.17" for ResNet-18's sum readout
    assert rows["readout argmax"].rule.startswith(
        "holds: the 95 % interval of k-class minus 2-class robust accuracy > 0; holds weaker: > 0"
    )
    assert row.rule.startswith(
        "holds: the 95 % interval of k-class minus 2-class robust accuracy >= 0.17; holds "
        "weaker: > 0"
    )
    # ResNet-18's other radii and task: 1.6 (0.56 - 0.24 - 0.05 = 0.27), CIFAR 0.4 (0.79 -
    # 0.675 - 0.05 = 0.065) and 0.8 (0.435 - 0.31 - 0.02 = 0.105); the small CNN's: all 0
    for cfg, want in ((resnet18_images(), [0.065, 0.105, 0.17, 0.27]),
                      (default_config(fa_images=True), [0.0] * 4)):  # fmt: skip
        df = ledger(tmp_path, cfg, _images(multi, binary)).loc["fa_images"]
        sums = df[df.index.get_level_values(1).str.endswith("sum")]
        assert sorted(sums.strong_lo) == want


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
    got = rows_by(df, "fa_images", "fa_images.mnist_parity@1.2")
    assert got["readout sum"].verdict == HOLDS and got["readout sum"].ci_lo == pytest.approx(0.3)
    assert got["readout sum"].ci_hi == pytest.approx(0.3)
    assert got["readout argmax"].ours_mean == pytest.approx(0.2)
    assert got["readout log_odds"].ours_mean == pytest.approx(0.3)


def test_fa_images_is_judged_only_on_a_paper_task(tmp_path):
    cfg = default_config(fa_images=True)
    cfg["studies"]["fa_images"]["paper_tasks"] = {"mnist_parity": "mnist_parity"}
    df = ledger(tmp_path, cfg, _images((0.8, 0.8, 0.8), (0.5, 0.5, 0.5))).reset_index()
    images = df[df.study == "fa_images"]
    assert set(images.id) == {"fa_images.mnist_parity@1.2", "fa_images.mnist_parity@1.6"}
    # a radius the curves lack: not run, saying which
    files = _images((0.8, 0.8, 0.8), (0.5, 0.5, 0.5))
    curves = files[IMAGES_CURVES]
    files[IMAGES_CURVES] = curves[~((curves.dataset == "cifar10_halves") & (curves.eps == 0.8))]
    df = ledger(tmp_path / "b", default_config(fa_images=True), files)
    rows = rows_by(df, "fa_images", "fa_images.cifar10_halves@0.8")
    assert {r.verdict for r in rows.values()} == {NOT_RUN}
    assert rows["readout sum"].reason == "no multiclass row for cifar10_halves at radius 0.8"


# ---- Study PRELU ---------------------------------------------------------------------------------
SYN = "synthetic, K=10, alpha=0.1"
ALIGNED = dict(frac_single={1: 0.1, 3: 0.95, 4: 0.9}, dist={1: (0.1, 0.6), 3: (0.5, 0.3), 4: (0.5, 0.1)})  # fmt: skip


@pytest.mark.parametrize(
    "radii, verdict",
    [
        ((0.316, 0.317), HOLDS),  # x sqrt(10): 1.0009 +- 0.020 in [0.9, 1.1]
        ((0.31, 0.32), WEAKER),  # [0.795, 1.197]: straddles 0.9 and 1.1, under 2.236
        ((0.5, 0.9), INCONCLUSIVE),  # (1.58, 2.85) with t(1) = 12.7: straddles 0 and 2.236
        ((0.8, 0.8), FAILS),  # 2.53 on both seeds: past the pReLU theorem's 2.236
    ],
)
def test_prelu_relu_radius_two_sided(tmp_path, radii, verdict):
    """Refined radii (bisection to 1e-4: brackets +- 5e-5, x sqrt(10) +- 1.58e-4 on the
    interval's ends)."""
    summary = prelu_summary({1: radii}, {1: 0.1}, {1: (0.1, 0.6)}, refined={1: 1e-4})
    row = one(ledger(tmp_path, default_config(), {PRELU: summary}), "prelu", "prelu.relu_radius")
    values = [r * math.sqrt(10) for r in radii]  # radius x sqrt(K), K = 10
    assert row.verdict == verdict
    lo, hi = t_ends(values, T_975_1)
    w = 5e-5 * math.sqrt(10)
    assert (row.ci_lo, row.ci_hi) == pytest.approx((lo - w, hi + w))
    assert "read-off per-point bisection" in row.ci_method
    assert (row.n, row.points, row.name) == (2, 1000, f"{SYN}, p=1")
    assert (row.strong_lo, row.strong_hi, row.weak_lo, row.weak_hi) == (0.9, 1.1, 0.0, 2.236)
    if verdict == WEAKER:  # the reason names the bound nearer the mean 0.996
        assert row.reason.startswith("interval [0.795, 1.2] straddles the strong threshold 0.9;")
    if verdict == INCONCLUSIVE:
        assert "straddles the weak threshold 2.24" in row.reason


def test_prelu_relu_radius_read_off_the_grid(tmp_path):
    """Unrefined, radii 0.316 and 0.317 are interpolated in the grid cell [0.3, 0.4]: each
    value's bracket is the cell, so the mean 0.3165 x sqrt(10) = 1.00087 can be anywhere in
    [0.3, 0.4] x sqrt(10) = [0.949, 1.265] by the read-off alone: the t interval 1.00087 +-
    12.706 x 0.000707 x sqrt(10) / sqrt(2) = +- 0.0201 widens by 0.0165 x sqrt(10) = 0.0522
    below and 0.0835 x sqrt(10) = 0.2641 above: [0.9286, 1.2851], across the strong bound
    1.1 by the resolution alone (1.1 < 1.265): a finer measurement decides, not seeds."""
    summary = prelu_summary({1: (0.316, 0.317)}, {1: 0.1}, {1: (0.1, 0.6)})
    row = one(ledger(tmp_path, default_config(), {PRELU: summary}), "prelu", "prelu.relu_radius")
    s10 = math.sqrt(10)
    lo, hi = t_ends([0.316 * s10, 0.317 * s10], T_975_1)
    assert (row.ci_lo, row.ci_hi) == pytest.approx((lo - 0.0165 * s10, hi + 0.0835 * s10))
    assert (row.ci_lo, row.ci_hi) == pytest.approx((0.9286, 1.2851), abs=1e-4)
    assert row.verdict == WEAKER
    assert "straddles the strong threshold 1.1" in row.reason
    assert "a finer measurement would decide, no number of seeds does" in row.reason
    assert "0.1 wide" in row.reason and "seeds would decide" not in row.reason


def test_prelu_robust_below_sqrt2_over_2_and_alignment(tmp_path):
    """Robust accuracy at 0.9 sqrt(2)/2 = 0.636 (interpolated on the grid): p=3 0.95 on both
    seeds holds (>= 0.9); p=4 (0.7, 0.72) is 0.71 +- 12.7 x 0.0141 / sqrt 2 = [0.583, 0.837]:
    over 0.5, under 0.9."""
    summary = prelu_summary({1: (0.316, 0.317), 3: (0.8, 0.8), 4: (0.45, 0.45)}, **ALIGNED,
                            below={3: (0.95, 0.95), 4: (0.7, 0.72)})  # fmt: skip
    assert summary.loc[summary.p == 4, "robust_acc@0.9sqrt(2)/2"].tolist() == [0.7, 0.72]
    df = ledger(tmp_path, default_config(), {PRELU: summary})
    assert verdicts(df, "prelu", "prelu.p3_robust_below") == [HOLDS]
    row = one(df, "prelu", "prelu.p4_robust_below")
    assert row.verdict == WEAKER and row.name == f"{SYN}, p=4, l2 radius 0.9 sqrt(2)/2"
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0.7, 0.72), T_975_1))
    assert verdicts(df, "prelu", "prelu.relu_averages") == [HOLDS]  # 0.9 averaging
    assert verdicts(df, "prelu", "prelu.p3_single") == [HOLDS]  # 0.95 single
    assert verdicts(df, "prelu", "prelu.relu_dist_F") == [HOLDS]  # 0.1
    assert verdicts(df, "prelu", "prelu.p3_dist_Fp") == [WEAKER]  # 0.3: under 0.5
    assert verdicts(df, "prelu", "prelu.p4_single") == [HOLDS]  # p = 4's rows: p = 3's rules
    assert verdicts(df, "prelu", "prelu.p4_clean") == [HOLDS]
    below = {3: (0.3, 0.3), 4: (0.4, 0.6)}  # p=3 under 0.5; p=4 0.5 +- 1.27
    summary = prelu_summary(
        {1: (0.316,) * 2, 3: (0.8,) * 2, 4: (0.45,) * 2}, **ALIGNED, below=below
    )
    df = ledger(tmp_path, default_config(), {PRELU: summary})
    assert verdicts(df, "prelu", "prelu.p3_robust_below") == [FAILS]
    assert verdicts(df, "prelu", "prelu.p4_robust_below") == [INCONCLUSIVE]


def test_prelu_robust_below_is_judged_against_the_ideal_classifier(tmp_path):
    """The robust_below claims divide the net's robust accuracy by the ideal F^(p)'s at the
    same radius on the study's mixture (K = 10, D = 200, 6/4, noise alpha / sqrt(D)). At the
    default alpha 0.1 F^(p) keeps every point at 0.636 (its radii are 0.707 +- ~0.01), so the
    ratio is the net's accuracy; at alpha 0.3 (F^(p)'s accuracy computed here by the library)
    the ratio is the net's accuracy over F^(p)'s upper end, and F^(p)'s bracket widens the
    interval."""
    summary = prelu_summary({1: (0.316, 0.317), 3: (0.8, 0.8), 4: (0.45, 0.45)}, **ALIGNED,
                            below={3: (0.95, 0.95), 4: (0.7, 0.72)})  # fmt: skip
    row = one(ledger(tmp_path, default_config(), {PRELU: summary}), "prelu",
              "prelu.p4_robust_below")  # fmt: skip
    assert row.ours_mean == pytest.approx(0.71)
    assert "ideal F^(4) robust accuracy at 0.636: [1.000, 1.000]" in row.note
    cfg = default_config()
    cfg["studies"]["prelu"]["synthetic"]["figure_alpha"] = 0.3
    summary = prelu_summary({1: (0.316, 0.317), 3: (0.8, 0.8), 4: (0.45, 0.45)}, **ALIGNED,
                            alpha=0.3, below={3: (0.6, 0.6), 4: (0.7, 0.72)})  # fmt: skip
    z, sign, y = mixture_coordinates(10, (0, 1, 2, 3, 4, 5), 0.3 / math.sqrt(200), 1.0,
                                     IDEAL_POINTS, IDEAL_SEED)  # fmt: skip
    ref_lo, ref_hi = robust_accuracy(*prelu_radius(z, sign, y, 3.0), 0.9 * math.sqrt(2) / 2)
    assert 0 < ref_lo <= ref_hi < 1
    row = one(ledger(tmp_path, cfg, {PRELU: summary}), "prelu", "prelu.p3_robust_below")
    assert row.ours_mean == pytest.approx(0.6 / ref_hi)
    assert f"[{ref_lo:.3f}, {ref_hi:.3f}]" in row.note
    assert row.ci_hi >= 0.6 / ref_lo - 1e-9  # F^(p)'s bracket is in the interval


def test_prelu_robust_below_not_run_on_a_summary_without_its_column(tmp_path):
    """A summary written before the column existed (declared optional): the claim is not
    run; the other synthetic claims are judged."""
    summary = prelu_summary({1: (0.316, 0.317), 3: (0.8, 0.8)}, **ALIGNED, refined={1: 1e-4})
    df = ledger(
        tmp_path, default_config(), {PRELU: summary.drop(columns="robust_acc@0.9sqrt(2)/2")}
    )
    row = one(df, "prelu", "prelu.p3_robust_below")
    assert row.verdict == NOT_RUN and "robust_acc@0.9sqrt(2)/2" in row.reason
    assert verdicts(df, "prelu", "prelu.relu_radius") == [HOLDS]


@pytest.mark.parametrize(
    "acc, points, verdict",
    [
        ({1: 0.25, 4: 0.80}, 1000, HOLDS),  # 0.55, about +-0.04: over 0 (the direction)
        ({1: 0.30, 4: 0.50}, 100, HOLDS),  # 0.20, about +-0.13: over 0
        ({1: 0.30, 4: 0.33}, 100, INCONCLUSIVE),  # 0.03, about +-0.13: straddles 0
        ({1: 0.50, 4: 0.30}, 1000, FAILS),
    ],
)
def test_prelu_mnist_one_seed_on_newcombes_interval(tmp_path, acc, points, verdict):
    files = {PRELU: prelu_summary({1: (0.316, 0.317)}, {1: 0.1}, {1: (0.1, 0.6)})}
    files[TABLE1] = prelu_table1(acc, n_points=points)
    row = one(ledger(tmp_path, default_config(), files), "prelu", "prelu.mnist_l2_1")
    d = acc[4] - acc[1]
    assert row.verdict == verdict
    # direction only (referee flag, review-45): Table 1's 0.775 - 0.301 is the paper's, not
    # our source text's, and our protocol is not the paper's
    assert (row.strong_lo, row.weak_lo) == (0.0, 0.0) and row.form == "direction"
    assert row.ours_mean == pytest.approx(d)
    want = iv.newcombe(acc[4], points, acc[1], points)
    assert (row.ci_lo, row.ci_hi) == pytest.approx((want.lo, want.hi))
    # by hand: the half-widths of the two Wilson intervals, added in quadrature (~ normal)
    half = 1.96 * math.sqrt((acc[4] * (1 - acc[4]) + acc[1] * (1 - acc[1])) / points)
    assert (row.ci_lo, row.ci_hi) == pytest.approx((d - half, d + half), abs=0.1 * half)
    assert (row.n, row.unit, row.points) == (points, "points", points)
    assert row.ci_method == "Newcombe over points"
    assert row.note == f"p=4 {acc[4]:.3f} vs p=1 {acc[1]:.3f}"
    assert row.fragile == ""  # an interval over the points of one run: no unit to leave out
    if verdict == INCONCLUSIVE:
        assert "points would decide (now 100" in row.reason


def test_prelu_mnist_several_seeds_on_the_t_interval_of_paired_differences(tmp_path):
    t1 = prelu_table1({1: (0.30, 0.30, 0.30), 4: (0.75, 0.80, 0.70)})
    assert list(t1[(t1.column == "l2 1") & (t1.p == 4)].per_seed) == ["0.75 0.8 0.7"]
    row = one(ledger(tmp_path, default_config(), {TABLE1: t1}), "prelu", "prelu.mnist_l2_1")
    assert row.verdict == HOLDS  # 0.45 +- 0.124 = [0.326, 0.574]: over 0
    assert (row.ci_lo, row.ci_hi) == pytest.approx(t_ends((0.45, 0.5, 0.4), T_975_2))
    assert (row.n, row.unit, row.ci_method, row.points) == (3, "seeds", "t over seeds", 1000)
    # leaving a seed out leaves two (t(1) = 12.7): without the first, (0.5, 0.4) is
    # 0.45 +- 0.635 and straddles 0; without the second or third, (0.45, 0.4) and (0.45, 0.5)
    # give [0.107, 0.743] and [0.157, 0.793]: still holds. The table has no seed ids, so the
    # unit is named by its place.
    assert row.fragile is True
    assert row.fragile_reason == "without the 1st of 3 seeds: inconclusive"


def test_prelu_parity_direction_and_not_run_without_the_mnist_half(tmp_path):
    # 2-class: p=4 0.6 vs p=1 0.5 over 1000 points: 0.1 +- 0.043, over 0; equal: straddles 0
    t1 = prelu_table1({1: 0.25, 4: 0.8}, parity={1: 0.5, 4: 0.6})
    df = ledger(tmp_path, default_config(), {TABLE1: t1})
    row = one(df, "prelu", "prelu.parity_l2_1")
    want = iv.newcombe(0.6, 1000, 0.5, 1000)
    assert row.verdict == HOLDS and (row.ci_lo, row.ci_hi) == pytest.approx((want.lo, want.hi))
    assert (row.strong_lo, row.weak_lo) == (0.0, 0.0)
    assert row.name == "MNIST parity (2-class), l2 1"
    t1 = prelu_table1({1: 0.25, 4: 0.8}, parity={1: 0.5, 4: 0.5})
    assert verdicts(ledger(tmp_path, default_config(), {TABLE1: t1}), "prelu",
                    "prelu.parity_linf_0.1") == [INCONCLUSIVE]  # fmt: skip
    # a table1 of 10-class nets only: the parity rows are not run, saying which row is missing
    t1 = prelu_table1({1: 0.25, 4: 0.8})
    row = one(ledger(tmp_path, default_config(), {TABLE1: t1}), "prelu", "prelu.parity_l1_5")
    assert (row.verdict, row.reason) == (NOT_RUN, "no 2-class p=1 row for l1 5")
    cfg = default_config()
    cfg["studies"]["prelu"]["mnist"] = None
    df = ledger(tmp_path, cfg, {TABLE1: t1}).reset_index()
    mnist = df[df.id.str.startswith(("prelu.mnist", "prelu.parity"))]
    assert set(mnist.verdict) == {NOT_RUN}
    assert set(mnist.reason) == {"the MNIST half is not configured"}


# ---- malformed outputs fail loudly ---------------------------------------------------------------
def fails(tmp_path, files: dict, where: tuple[str, str], *fragments: str, cfg=None) -> None:
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
    fails(tmp_path, {FA: df}, FA, "column 'clean_acc'")  # NaN radii and 9.5 > 1


def test_swapped_worst_case_and_attack_columns_fail(tmp_path):
    df = fa_summary()
    cols = ["critical_radius.worst", "critical_radius.pgd_ce"]
    df[cols] = df[cols[::-1]].to_numpy()
    fails(tmp_path, {FA: df}, FA, "'critical_radius.worst'", "must be the smallest")


def test_dropped_column_fails(tmp_path):
    fails(tmp_path, {FA: fa_summary().drop(columns="setting")}, FA, "missing column 'setting'")
    fails(
        tmp_path, {FA: fa_summary().drop(columns="critical_radius.worst")}, FA,
        "'critical_radius.worst'",
    )  # fmt: skip


def test_nan_where_a_claim_needs_a_value_fails(tmp_path):
    df = fa_summary()
    df.loc[(df.setting == "multiclass") & (df.seed == 1), "cosine_same_class_mean"] = float("nan")
    df.loc[(df.setting == "binary") & (df.seed == 1), "cosine_same_class_mean"] = float("nan")
    fails(tmp_path, {FA: df}, FA, "fa.cosine_blocks", "'cosine_same_class_mean' is NaN")
    df = fa_summary()
    df.loc[0, "clean_acc"] = float("nan")
    fails(tmp_path, {FA: df}, FA, "'clean_acc' has NaN")


def test_text_in_a_numeric_column_and_unknown_settings_fail(tmp_path):
    df = fa_summary().astype({"fa_index": object})
    df.loc[1, "fa_index"] = "binary"
    fails(tmp_path, {FA: df}, FA, "'fa_index' is not numeric")
    df = fa_summary()
    df.loc[2, "setting"] = "10-class"
    fails(tmp_path, {FA: df}, FA, "'setting' has values ['10-class']")
    df = fa_summary().assign(other_class_ratio=-0.1)
    fails(tmp_path, {FA: df}, FA, "'other_class_ratio'", "outside its valid range")


def test_malformed_scaling_table_fails(tmp_path):
    files = {FA: fa_summary(), FA_SCALING: fa_scaling().drop(columns="label")}
    fails(tmp_path, files, FA_SCALING, "missing column 'label'")
    bad = fa_scaling()
    bad.loc[0, "critical_radius"] = -1.0
    fails(tmp_path, {FA: fa_summary(), FA_SCALING: bad}, FA_SCALING, "'critical_radius'",
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
        fails(tmp_path, {**files, IMAGES_CURVES: bad}, IMAGES_CURVES, *fragments, cfg=cfg)
    # the summary is still checked: a worst case above an attack
    summary = files[IMAGES].copy()
    summary["robust_acc.pgd_margin_img.mean"] = summary["robust_acc.worst.mean"] / 2
    fails(tmp_path, {**files, IMAGES: summary}, IMAGES, "must be the smallest", cfg=cfg)


def test_malformed_prelu_outputs_fail(tmp_path):
    summary = prelu_summary({1: (0.3,)}, {1: 0.1}, {1: (0.3, 0.5)})
    summary[["frac_single", "dist_F"]] = summary[["dist_F", "frac_single"]].to_numpy()
    fails(tmp_path, {PRELU: summary}, PRELU, "frac_single")
    summary = prelu_summary({1: (0.3,)}, {1: 0.1}, {1: (0.3, 0.5)})
    bad = summary.assign(**{"robust_acc@0.9sqrt(2)/2": 1.5})
    fails(tmp_path / "r", {PRELU: bad}, PRELU, "'robust_acc@0.9sqrt(2)/2'", "valid range")
    t1 = prelu_table1({1: (0.3, 0.3), 4: (0.75, 0.8, 0.7)})
    fails(tmp_path / "a", {TABLE1: t1}, TABLE1, "prelu.mnist", "3 p=4 seeds but 2 p=1 seeds")
    t1 = prelu_table1({1: 0.3, 4: 0.75})
    fails(tmp_path / "b", {TABLE1: t1.drop(columns="per_seed")}, TABLE1, "'per_seed'")
    fails(tmp_path / "c", {TABLE1: t1.assign(ours=1.5)}, TABLE1, "'ours'", "valid range")
    fails(tmp_path / "d", {TABLE1: t1.assign(task="3-class")}, TABLE1, "'task' has values")


def test_every_claim_row_has_its_source_and_derivation(tmp_path):
    """Each row carries the claim's citation and derivation, judged or not."""
    df = ledger(tmp_path, default_config(), {FA: fa_summary()}).reset_index()
    assert (df.source != "").all() and (df.quote != "").all() and (df.scope != "").all()
    assert (df.derivation != "").all()
    row = df[df.id == "fa.binary_radius"].iloc[0]
    assert row.source.startswith("Li et al. 2025, slides 'Averaged Features are Non-robust")
    assert "zero δ -robust accuracy" in row.quote
    assert np.isfinite(row.strong_hi) and row.derivation.startswith("A bound, one-sided")


# ---- one verdict per claim -----------------------------------------------------------------
def test_a_claim_is_listed_where_it_is_judged_and_once_where_no_study_judges_it():
    """A not-applicable row is dropped when another study judges the claim (or would: not
    run); a claim no study judges keeps its first row, naming the others and the cost."""
    from ibrobust.ledger.table import COLUMNS, one_verdict_per_claim

    def row(study, id_, verdict, reason=""):
        return dict.fromkeys(COLUMNS, "") | dict(study=study, id=id_, setting="s",
                                                 verdict=verdict, reason=reason)  # fmt: skip

    df = pd.DataFrame([
        row("a", "x.judged", HOLDS), row("b", "x.judged", NOT_APPLICABLE, "limit only"),
        row("a", "x.pending", NOT_RUN, "no converged run"),
        row("b", "x.pending", NOT_APPLICABLE, "limit only"),
        row("a", "x.nowhere", NOT_APPLICABLE, "paper scale only"),
        row("b", "x.nowhere", NOT_APPLICABLE, "paper scale only"),
    ], columns=COLUMNS)  # fmt: skip
    got = one_verdict_per_claim(df, {"x.nowhere": "days of GPU time"})
    assert list(zip(got.study, got.id, got.verdict, strict=True)) == [
        ("a", "x.judged", HOLDS), ("a", "x.pending", NOT_RUN),
        ("a", "x.nowhere", NOT_APPLICABLE),
    ]  # fmt: skip
    assert got.reason.iloc[2] == (
        "paper scale only (not applicable in b too); no study here judges it: days of GPU time"
    )
