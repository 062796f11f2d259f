"""The error control across looks (ibrobust.decide.spending), the predicted chance of
deciding (ibrobust.decide.power) and the simulation that the method keeps the level over
repeated looks while the naive repeated interval does not (ibrobust.decide.simulation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ibrobust.decide.power import chance_to_decide, units_for
from ibrobust.decide.simulation import looks_table, simulate_looks
from ibrobust.decide.spending import Spending, spending


def test_union_bound_spending_hand_computed():
    s = spending(0.95)
    assert s.alpha_at(1) == pytest.approx(0.05 * 6 / math.pi**2)  # 0.030396
    assert s.alpha_at(2) == pytest.approx(0.05 * 6 / (4 * math.pi**2))
    assert s.level_at(1) == pytest.approx(1 - 0.030396, abs=1e-6)
    assert s.spent(10) == pytest.approx(0.05 * 6 / math.pi**2 * sum(1 / k**2 for k in range(1, 11)))
    assert s.spent(10_000) < 0.05 and s.spent(10_000) == pytest.approx(0.05, rel=1e-3)
    # a larger power spends more at the first look: zeta(3) = 1.2020569
    assert Spending(0.05, 3.0).alpha_at(1) == pytest.approx(0.05 / 1.2020569, rel=1e-6)
    assert "look 2" in s.method(2) and "99.24 %" in s.method(2)


@pytest.mark.parametrize(
    "args, key",
    [((0.95, "pocock"), "ci_method"), ((1.0,), "level"), ((0.95, "union_bound", 1.0), "power")],
)
def test_spending_rejects_bad_settings(args, key):
    with pytest.raises(ValueError, match=key):
        spending(*args)
    with pytest.raises(ValueError, match="from 1"):
        spending(0.95).alpha_at(0)


def test_chance_to_decide_hand_computed():
    # n = 4 units, sigma 2, center 1 above the threshold; m = 16 units at level 0.95:
    # half = t(15) * 2 / 4, predictive sd = 2 sqrt(12 / 64)
    half = stats.t.ppf(0.975, 15) * 2 / 4
    sd = 2 * math.sqrt(12 / 64)
    want = stats.norm.sf((half - 1) / sd) + stats.norm.cdf((-half - 1) / sd)
    assert chance_to_decide(1.0, 2.0, 4, 16, 0.95) == pytest.approx(want)
    # no new units: decided exactly when the interval already excludes the threshold
    assert chance_to_decide(1.0, 2.0, 4, 4, 0.95) == 0.0  # half = 3.18 > 1
    assert chance_to_decide(5.0, 2.0, 4, 4, 0.95) == 1.0
    # more units, more chance; normal quantile when not a t interval
    p = chance_to_decide(1.0, 2.0, 4, np.array([8, 16, 64]), 0.95)
    assert np.all(np.diff(p) > 0)
    assert chance_to_decide(1.0, 2.0, 4, 16, 0.95, t_based=False) > want


def test_units_for_is_the_first_reaching_the_target():
    m = units_for(1.0, 2.0, 4, 0.95, 0.8, cap=200)
    assert m is not None
    assert (
        chance_to_decide(1.0, 2.0, 4, m, 0.95) >= 0.8 > chance_to_decide(1.0, 2.0, 4, m - 1, 0.95)
    )
    assert units_for(1.0, 2.0, 4, 0.95, 0.8, cap=m - 1) is None


def test_spending_keeps_the_level_over_looks_and_the_naive_interval_does_not():
    """The issue's simulation: true effect on the threshold, units added per look as the
    planner adds them; the wrong "holds" / "does not hold" rate by look K."""
    level = 0.95
    t = looks_table(spending(level).level_at, level, ks=(1, 2, 3, 5, 10), reps=10000)
    alpha = 1 - level
    assert (t.method_wrong <= alpha).all(), t
    assert (t.method_wrong_holds <= alpha / 2).all() and (t.method_wrong_fails <= alpha / 2).all()
    # the naive interval: about alpha at one look, well above it from the second on
    assert t.naive_wrong.iloc[0] == pytest.approx(alpha, abs=0.006)
    assert (t.naive_wrong.iloc[1:] > 1.5 * alpha).all(), t
    assert t.naive_wrong.is_monotonic_increasing
    # the looks are exercised: units grow past the first 3 by look 10
    assert t.method_mean_units.iloc[-1] > 50


def test_simulation_is_seeded():
    a = simulate_looks(lambda k: 0.95, looks=3, reps=500, seed=1)
    b = simulate_looks(lambda k: 0.95, looks=3, reps=500, seed=1)
    assert a.equals(b)
    with pytest.raises(ValueError, match="first"):
        simulate_looks(lambda k: 0.95, first=1)
