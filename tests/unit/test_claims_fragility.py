"""Fragility: a verdict is fragile when leaving out any one unit (seed, draw, run) changes it
(:func:`ibrobust.claims.core.fragility`, :meth:`~ibrobust.claims.core.Measurement.leave_one_out`);
a pooled slope leaves out one group and refits (:func:`ibrobust.claims.core.pooled_slope`);
the ledger fills its ``fragile`` and ``fragile_reason`` columns. Hand-computed cases."""

from __future__ import annotations

import math

import pytest
from claims_fixtures import (
    T_975_1,
    T_975_2,
    T_975_3,
    T_975_5,
    default_config,
    edge_outputs,
    fa_curve,
    fa_margin_gradient,
    fa_scaling,
    fa_summary,
    ledger,
    one,
)

from ibrobust.claims import intervals as iv
from ibrobust.claims.core import (
    HOLDS,
    INCONCLUSIVE,
    NOT_RUN,
    WEAKER,
    Fragility,
    Measurement,
    NotRun,
    at_least,
    between,
    decide,
    fragility,
    pooled_slope,
)

SEEDS = ("seed 0", "seed 1", "seed 2")


# ---- core.fragility ------------------------------------------------------------------------------
def test_a_verdict_that_one_seed_decides_is_fragile_and_the_reason_names_it():
    """(0.2, 1.0, 1.1) against > 0: mean 0.767, sd 0.493, 0.767 -+ 4.303 x 0.493 / sqrt 3 =
    [-0.459, 1.992] straddles 0: inconclusive. Without seed 0, (1.0, 1.1): 1.05 -+ 12.71 x
    0.0707 / sqrt 2 = [0.415, 1.685]: holds. Without seed 1 or 2, (0.2, 1.1) or (0.2, 1.0):
    [-5.07, 6.37] and [-4.88, 5.68]: still inconclusive."""
    rule = at_least("x", 0.0, 0.0)
    m = Measurement((0.2, 1.0, 1.1), labels=SEEDS)
    assert decide(rule, m).verdict == INCONCLUSIVE
    assert (m.ci().lo, m.ci().hi) == pytest.approx((0.767 - 1.2254, 0.767 + 1.2254), abs=1e-3)
    without = dict(m.leave_one_out())
    assert list(without) == list(SEEDS)
    assert without["seed 0"].values == (1.0, 1.1) and without["seed 0"].labels == SEEDS[1:]
    lo, hi = without["seed 0"].ci().lo, without["seed 0"].ci().hi
    assert (lo, hi) == pytest.approx((1.05 - T_975_1 * 0.05, 1.05 + T_975_1 * 0.05))
    assert fragility(rule, m) == Fragility(True, "without seed 0: holds")


def test_a_holding_verdict_that_every_seed_carries_is_fragile_too():
    """(0.9, 1.0, 1.1) against >= 0.5: [0.752, 1.248] holds; any two seeds leave t(1) = 12.7
    and an interval across 0.5: the verdict stands on all three."""
    rule = at_least("x", 0.5, 0.5)
    m = Measurement((0.9, 1.0, 1.1), labels=SEEDS)
    assert decide(rule, m).verdict == HOLDS
    assert fragility(rule, m) == Fragility(
        True, "without seed 0: inconclusive; without seed 1: inconclusive; "
        "without seed 2: inconclusive",
    )  # fmt: skip


def test_a_robust_verdict_is_not_fragile():
    """(0.95, 1.0, 1.05) against > 0: [0.876, 1.124]; without any seed, at worst (0.95,
    1.05) = 1.0 -+ 12.71 x 0.05 = [0.365, 1.635], still over 0."""
    m = Measurement((0.95, 1.0, 1.05), labels=SEEDS)
    assert fragility(at_least("x", 0.0, 0.0), m) == Fragility(False, "")
    # an interval wholly outside the weak region stays there without any of 4 draws
    m = Measurement((-0.05, -0.06, -0.04, -0.05), unit="draws")
    assert fragility(at_least("x", 0.0, 0.0), m) == Fragility(False)


def test_units_without_labels_are_named_by_their_place():
    m = Measurement((0.2, 1.0, 1.1))
    names = [name for name, _ in m.leave_one_out()]
    assert names == ["the 1st of 3 seeds", "the 2nd of 3 seeds", "the 3rd of 3 seeds"]
    assert fragility(at_least("x", 0.0, 0.0), m).reason == "without the 1st of 3 seeds: holds"
    runs = Measurement(tuple(range(12)), unit="runs")
    assert [n for n, _ in runs.leave_one_out()][10:] == [
        "the 11th of 12 runs",
        "the 12th of 12 runs",
    ]


@pytest.mark.parametrize(
    "m",
    [
        Measurement((0.5,)),  # one unit: nothing to leave out
        Measurement((0.9,), unit="runs", interval=iv.wilson(90, 100)),  # points of one run
        Measurement((0.8, 1.0), unit="runs", interval=iv.wilson(45, 50)),  # pooled pairs
        Measurement((0.05,), unit="runs", interval=lambda level: iv.bootstrap_mean([0, 0.1])),
    ],
)
def test_fragility_is_not_assessed_without_units_to_leave_out(m):
    assert m.leave_one_out() is None
    assert fragility(at_least("x", 0.0, 0.0), m) == Fragility(
        None, "not assessed: no unit to leave out"
    )


# ---- pooled_slope's jackknife --------------------------------------------------------------------
X = (0.0, 1.0, 2.0)
LINES = {"A": (1.0, 2.0), "B": (3.0, 2.2), "C": (-1.0, 1.8)}  # group: (intercept, slope)


def lines(groups=LINES):
    xs, ys, gs = [], [], []
    for g, (a, b) in groups.items():
        xs += X
        ys += [a + b * x for x in X]
        gs += [g] * len(X)
    return xs, ys, gs


def test_pooled_slope_leaves_out_one_group_and_refits():
    """Three exact lines on x = 0, 1, 2 (Sxx 2 each), an intercept per group: the common
    slope is the mean 2.0; residuals (s_g - 2)(x - 1), SSR = 2 sum (s_g - 2)^2 = 0.16 over
    9 - 3 - 1 = 5 df and Sxx 6: SE = sqrt(0.16 / 5 / 6) = 0.0730. Without A (slopes 2.2,
    1.8): 2.0, SSR 0.16 over 6 - 2 - 1 = 3 df, Sxx 4: SE 0.1155; without B: 1.9, SSR 0.04,
    SE 0.0577; without C: 2.1, SE 0.0577."""
    m = pooled_slope(*lines(), unit="(x, group) pairs", group_name="seed")
    assert m.values == pytest.approx((2.0, 2.2, 1.8)) and m.unit == "seeds"
    full = m.ci()
    se = math.sqrt(0.16 / 5 / 6)
    assert (full.center, full.lo, full.hi, full.n) == pytest.approx(
        (2.0, 2.0 - T_975_5 * se, 2.0 + T_975_5 * se, 9)
    )
    subs = dict(m.leave_one_out())
    assert list(subs) == ["seed A", "seed B", "seed C"]
    for name, (slope, ssr) in {
        "seed A": (2.0, 0.16),
        "seed B": (1.9, 0.04),
        "seed C": (2.1, 0.04),
    }.items():
        se = math.sqrt(ssr / 3 / 4)
        got = subs[name].ci()
        assert (got.center, got.lo, got.hi, got.n) == pytest.approx(
            (slope, slope - T_975_3 * se, slope + T_975_3 * se, 6)
        ), name
    assert subs["seed A"].values == pytest.approx((2.2, 1.8))
    # the refit is a pooled slope itself: leaving out another group refits on one
    (one_left,) = [s for n, s in subs["seed A"].leave_one_out() if n == "seed B"]
    assert one_left.values == pytest.approx((1.8,)) and one_left.ci().center == pytest.approx(1.8)


def test_a_pooled_slope_that_one_group_holds_in_place_is_fragile():
    """Against (1.8, 2.2) strong, (0, inf) weak: the full [1.812, 2.188] holds; each refit
    straddles 1.8 or 2.2 ([1.633, 2.367], [1.716, 2.084], [1.916, 2.284]): holds weaker."""
    rule = between("slope", (1.8, 2.2), (0.0, math.inf))
    m = pooled_slope(*lines(), unit="(x, group) pairs", group_name="seed")
    assert decide(rule, m).verdict == HOLDS
    assert fragility(rule, m) == Fragility(
        True,
        "without seed A: holds weaker; without seed B: holds weaker; without seed C: holds weaker",
    )
    assert fragility(at_least("slope", 1.0, 0.0), m) == Fragility(False, "")


def test_pooled_slope_skips_groups_with_one_x_and_refuses_none():
    xs, ys, gs = lines({"A": (1.0, 2.0), "B": (3.0, 2.2)})
    xs, ys, gs = [*xs, 5.0], [*ys, 0.0], [*gs, "D"]  # D: one point, no slope of its own
    m = pooled_slope(xs, ys, gs, unit="pairs")
    assert m.values == pytest.approx((2.0, 2.2)) and [n for n, _ in m.leave_one_out()] == [
        "seed A", "seed B", "seed D",
    ]  # fmt: skip
    with pytest.raises(NotRun, match="no seed with two or more distinct x values"):
        pooled_slope([1.0, 1.0], [0.0, 1.0], ["A", "A"], unit="pairs")


# ---- the ledger's fragile column -----------------------------------------------------------------
def test_the_ledger_fills_fragile_and_its_reason(tmp_path):
    """FA's default study: the near-zero radius (0.9, 0.95, 0.85) holds on [0.709, 1.058]
    (0.9 -+ 0.124, widened by its grid brackets 8-9, 9-10, 8-9 to their means 0.833 and
    0.933). Without seed 0, (0.95, 0.85) is 0.9 -+ 12.706 x 0.0707 / sqrt 2 = 0.9 -+ 0.635,
    widened by 0.05 each side: [0.215, 1.585], across the weak bound 1.265 (0.4 sqrt(10)):
    inconclusive; without seed 1, (0.9, 0.85): 0.875 -+ 0.318 widened by 0.075 / 0.025 to
    [0.482, 1.218]: inside (0, 1.241): holds; without seed 2, (0.9, 0.95): 0.925 -+ 0.318
    widened to [0.532, 1.268]: across 1.265: inconclusive. Clean accuracy 1.0 on every
    seed holds without any. A censored reference (the grid's top on every seed) holds
    without any. The scaling slope (a pooled slope) refits per seed: exact power laws, holds.
    Not-run rows: not assessed (empty)."""
    files = {("fa", "figures/summary.csv"): fa_summary(),
             ("fa", "figures/critical_radius_scaling.csv"): fa_scaling(),
             ("fa", "figures/margin_gradient_summary.csv"): fa_margin_gradient(),
             ("fa", "figures/robust_accuracy_vs_radius.csv"): fa_curve()}  # fmt: skip
    df = ledger(tmp_path, default_config(), files)
    row = one(df, "fa", "fa.binary_radius")
    assert (row.verdict, row.fragile) == (HOLDS, True)
    assert row.fragile_reason == "without seed 0: inconclusive; without seed 2: inconclusive"
    assert one(df, "fa", "fa.clean_accuracy").fragile is False
    assert one(df, "fa", "fa.reference_radius").fragile is False
    row = one(df, "fa", "fa.scaling_slope")
    assert (row.fragile, row.fragile_reason) == (False, "")
    df = df.reset_index()
    not_run = df[df.verdict == NOT_RUN]
    assert len(not_run) and (not_run.fragile == "").all() and (not_run.fragile_reason == "").all()
    judged = df[df.verdict.isin([HOLDS, WEAKER, INCONCLUSIVE])]
    assert set(judged.fragile.map(repr)) <= {"True", "False", "''"}


def test_the_ledger_names_draws_by_their_ids(tmp_path):
    """PRICE-LIN's GD - CD under ERM per draw (0.02, 0.03, 0.04, 0.15) against > 0: 0.06 -+
    3.182 x 0.0594 / 2 = [-0.035, 0.155] straddles 0; without draw 3 the rest, 0.03 -+ 4.303
    x 0.01 / sqrt 3 = [0.005, 0.055], hold."""
    diffs = (0.02, 0.03, 0.04, 0.15)
    files = edge_outputs(lambda ds, o, f, n, d: diffs[d] if f == 0 else 0.0)
    row = one(ledger(tmp_path, default_config(), files), "price_linear", "price.gd_minus_cd_erm")
    assert row.verdict == INCONCLUSIVE
    assert (row.fragile, row.fragile_reason) == (True, "without draw 3: holds")
    assert 0.03 - T_975_2 * 0.01 / math.sqrt(3) == pytest.approx(0.0052, abs=1e-4)
