"""The ledger's intervals against hand-computed values, and the four verdicts decided on them
(one hand-made measurement per verdict; every straddle of a threshold is inconclusive)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibrobust.claims import intervals as iv
from ibrobust.claims.core import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    WEAKER,
    Measurement,
    at_least,
    at_most,
    between,
    decide,
)

T_975_2 = 4.302652729911275  # Student t quantile, 2 df (tables)
T_975_1 = 12.706204736174707


def test_t_interval_by_hand():
    got = iv.t_interval([1.0, 2.0, 3.0])  # mean 2, sd 1
    half = T_975_2 / math.sqrt(3)
    assert (got.lo, got.hi, got.center, got.n) == pytest.approx((2 - half, 2 + half, 2.0, 3))
    assert got.method == "t over seeds" and got.spread == pytest.approx(1.0)
    assert iv.t_interval([0.5]) is None  # one unit: no spread, no interval
    same = iv.t_interval([0.3, 0.3, 0.3])
    assert same.lo == same.hi == pytest.approx(0.3)


def test_wilson_by_hand():
    # 8 of 10: center (0.8 + z^2/20) / (1 + z^2/10), half z sqrt(0.016 + z^2/400) / (1 + z^2/10)
    z = 1.959963984540054
    den = 1 + z * z / 10
    center, half = (0.8 + z * z / 20) / den, z * math.sqrt(0.016 + z * z / 400) / den
    got = iv.wilson(8, 10)
    assert (got.lo, got.hi) == pytest.approx((center - half, center + half))
    assert (round(got.lo, 4), round(got.hi, 4)) == (0.4902, 0.9433)  # textbook values
    assert iv.wilson(0, 5).lo == pytest.approx(0.0) and iv.wilson(5, 5).hi == pytest.approx(1.0)
    with pytest.raises(ValueError, match="successes"):
        iv.wilson(6, 5)


def test_newcombe_matches_his_worked_example():
    # Newcombe (1998) Table II, 56/70 vs 48/80: difference 0.2000, method 10: 0.0524 to 0.3339
    got = iv.newcombe(56 / 70, 70, 48 / 80, 80)
    assert got.center == pytest.approx(0.2)
    assert (round(got.lo, 4), round(got.hi, 4)) == (0.0524, 0.3339)


def test_slope_interval_by_hand():
    # (0, 0), (1, 1), (2, 1): slope 1/2, residuals -1/6, 1/3, -1/6, SE sqrt((1/6) / 1 / 2)
    got = iv.slope_interval([0, 1, 2], [0, 1, 1])
    half = T_975_1 * math.sqrt(1 / 12)
    assert (got.center, got.lo, got.hi) == pytest.approx((0.5, 0.5 - half, 0.5 + half))
    exact = iv.slope_interval([1, 2, 3, 4], [2, 4, 6, 8])
    assert exact.lo == pytest.approx(2.0) and exact.hi == pytest.approx(2.0)
    assert iv.slope_interval([1, 2], [1, 2]) is None
    # an intercept per group: two parallel lines 1 apart give the slope exactly
    par = iv.slope_interval([0, 1, 2, 0, 1, 2], [0, 1, 2, 1, 2, 3], groups=[0, 0, 0, 1, 1, 1])
    assert (par.lo, par.hi) == pytest.approx((1.0, 1.0)) and par.n == 6
    common = iv.slope_interval([0, 1, 2, 0, 1, 2], [0, 1, 2, 1, 2, 3])  # one intercept: wider
    assert common.hi - common.lo > 0.5


def test_bootstraps_are_seeded_and_collapse_on_constant_values():
    a = iv.bootstrap_mean([0, 1, 1, 0, 1, 1, 1, 0], seed=3)
    b = iv.bootstrap_mean([0, 1, 1, 0, 1, 1, 1, 0], seed=3)
    assert (a.lo, a.hi) == (b.lo, b.hi) and a.lo < 0.625 < a.hi
    flat = iv.bootstrap_mean([0.25] * 20)
    assert flat.lo == flat.hi == pytest.approx(0.25)
    h = iv.hierarchical([[1.0] * 5, [1.0] * 5, [1.0] * 5])
    assert h.lo == h.hi == pytest.approx(1.0) and h.n == 15
    spread = iv.hierarchical([np.zeros(50), np.ones(50)], shared_points=False)
    assert spread.lo <= 0.25 and spread.hi >= 0.75  # two seeds that disagree: wide


def test_bootstrap_matches_the_normal_interval_on_many_points():
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 2.0, size=2000)
    got = iv.bootstrap_mean(x)
    half = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
    assert got.lo == pytest.approx(x.mean() - half, abs=0.1 * half)
    assert got.hi == pytest.approx(x.mean() + half, abs=0.1 * half)


def test_units_needed_from_the_measured_spread():
    got = iv.t_interval([0.9, 1.1, 1.3])  # mean 1.1, sd 0.2
    need = iv.units_needed(got, 1.0)  # distance 0.1: t(n-1) 0.2 / sqrt(n) < 0.1
    assert need == next(n for n in range(2, 100) if iv._t(0.95, n - 1) * 0.2 / math.sqrt(n) < 0.1)
    assert need == 18
    boot = iv.Interval(0.4, 0.8, 0.6, 100, "points", "bootstrap over points")
    assert iv.units_needed(boot, 0.5) == 400  # half-width 0.2 -> 0.1: 4x the points
    assert iv.units_needed(boot, 0.6) is None  # the estimate sits on the threshold
    # an end on the threshold (a strict rule's bound, "> 0", touched by [0, 0.125]): the
    # interval does not exclude it with its 10 points, so more than 10 (side = distance
    # 0.05: the estimate n (0.05 / 0.05)^2 = 10 is the present n, which does not decide)
    touching = iv.Interval(0.0, 0.125, 0.05, 10, "points", "bootstrap over points")
    assert iv.units_needed(touching, 0.0) == 11


def test_units_needed_when_the_mean_sits_on_the_threshold_up_to_rounding():
    """The mean of (0.0, 0.03, 0.04, 0.05) is 0.03 less 3e-18: sitting on 0.03, not an
    estimate of 10^31 units (whose t quantile scipy cannot take)."""
    got = iv.t_interval([0.0, 0.03, 0.04, 0.05])
    assert got.center != 0.03 and iv.units_needed(got, 0.03) is None
    # a tiny but real distance: the normal answer, without stepping t through 10^12 units
    far = iv.t_interval([0.99, 1.01])  # sd 0.0141
    need = iv.units_needed(far, 1.0 + 1e-8)
    assert need == pytest.approx((1.959964 * 0.0141421356 / 1e-8) ** 2, rel=1e-6)


# ---- verdicts on hand-made measurements ------------------------------------------------
RULE = at_least("ratio", 1.5, 1.0)  # strong [1.5, inf), weak [1.0, inf)


@pytest.mark.parametrize(
    ("values", "verdict"),
    [
        ((2.0, 2.1, 1.9), HOLDS),  # [1.75, 2.25] inside the strong region
        ((1.2, 1.25, 1.3), WEAKER),  # [1.13, 1.37]: weak, not strong
        ((0.5, 0.6, 0.55), FAILS),  # [0.43, 0.67]: wholly below the weak threshold
        ((0.9, 1.3, 1.1), INCONCLUSIVE),  # [0.60, 1.60] straddles 1.0
    ],
)
def test_each_verdict_from_a_hand_made_measurement(values, verdict):
    assert decide(RULE, Measurement(values)).verdict == verdict


def test_a_straddle_of_every_kind_of_threshold_is_inconclusive_with_the_units_needed():
    cases = [
        (at_least("x", 0.5, 0.0), (-0.3, 0.1, 0.5)),  # lower weak bound
        (at_most("x", 0.2, 0.5), (0.3, 0.45, 0.7)),  # upper weak bound
        (between("x", (0.9, 1.1), (0.5, 2.0)), (1.6, 1.9, 2.4)),  # a two-sided rule's top
    ]
    for rule, values in cases:
        d = decide(rule, Measurement(values))
        assert d.verdict == INCONCLUSIVE, (rule, values)
        assert "straddles the weak threshold" in d.reason and "seeds would decide" in d.reason
    on_it = decide(at_most("x", 0.2, 0.5), Measurement((0.3, 0.5, 0.7)))
    assert on_it.verdict == INCONCLUSIVE and "sits on it: no number of seeds" in on_it.reason
    d = decide(RULE, Measurement((0.9, 1.3, 1.1)))
    assert "[0.603, 1.6] straddles the weak threshold 1" in d.reason
    assert "about 18 seeds would decide (now 3" in d.reason


def test_straddling_only_the_strong_threshold_holds_weaker_and_says_so():
    d = decide(RULE, Measurement((1.4, 1.5, 1.6)))  # [1.25, 1.75]: in weak, straddles 1.5
    assert d.verdict == WEAKER
    assert "straddles the strong threshold 1.5" in d.reason


def test_one_unit_without_another_interval_is_inconclusive():
    d = decide(RULE, Measurement((3.0,)))
    assert d.verdict == INCONCLUSIVE and "gives no interval" in d.reason
    on_points = Measurement((3.0,), interval=iv.wilson(9, 10), unit="points")
    assert decide(at_least("acc", 0.5, 0.2), on_points).verdict == HOLDS


def test_a_censored_measurement_has_no_upper_end():
    m = Measurement((30.0, 32.0, 32.0), lower_bound=True)  # the grid's top is 32
    assert m.ci().hi == math.inf
    assert decide(at_least("r", 10, 5), m).verdict == HOLDS
    above = decide(at_least("r", 40, 35), m)  # thresholds beyond the grid's top
    assert above.verdict == INCONCLUSIVE and "larger radius grid" in above.reason
    below = decide(between("r", (10, 20), (5, 31)), m)  # more seeds can lift the lower end
    assert below.verdict == INCONCLUSIVE and "seeds would decide" in below.reason


def test_rules_need_the_weak_region_to_hold_the_strong_one():
    with pytest.raises(ValueError, match="must contain"):
        at_least("x", 1.0, 2.0)
