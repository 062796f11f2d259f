"""Claim forms (:mod:`ibrobust.claims.forms`): a claim whose rule or measurement does not fit
its declared form is refused when it is built and when it is judged; the per-cell forms are
decided on Bonferroni-corrected intervals, hand-computed here.

For 3 values per cell with sd 1 (e.g. 1, 2, 3) the t interval is mean -+ t(2) / sqrt 3. The
t distribution with 2 degrees of freedom has the closed form F(t) = 1/2 + t / (2 sqrt(2 +
t^2)), so its quantile at p is t = q sqrt(2 / (1 - q^2)) with q = 2p - 1. At 95 %: p =
0.975, t = 4.303; Bonferroni over 3 cells: each at 1 - 0.05/3, p = 1 - 0.05/6, t = 7.649."""

from __future__ import annotations

import math

import pytest

from ibrobust.claims import forms
from ibrobust.claims.citations import TSILIVIS_2024, Citation
from ibrobust.claims.core import Claim, Measurement, at_least, at_most, between
from ibrobust.claims.forms import FormError, corrected_level, judge, per_cell, trend
from ibrobust.claims.intervals import slope_interval
from ibrobust.claims.verdicts import FAILS, HOLDS, INCONCLUSIVE, WEAKER

CITE = Citation(TSILIVIS_2024, "Sec. 5.1", "there are cases", "linear models")


def t2(p: float) -> float:
    """The t(2) quantile at p, by its closed form."""
    q = 2 * p - 1
    return q * math.sqrt(2 / (1 - q * q))


def claim(form: str, rule, compute=lambda src, ctx: Measurement((1.0, 2.0))) -> Claim:
    return Claim(
        id="x.test", claim="c", citation=CITE, derivation="d", paper="p", measure="m",
        rule=rule, compute=compute, form=form,
    )  # fmt: skip


POS = at_least("edge", 0.0, 0.0, strict=True)  # a direction (P5)


# ---- the rule family a form fixes, checked when the claim is built -------------------------
def test_a_direction_needs_strong_equal_weak_on_one_side():
    claim(forms.DIRECTION, POS)  # fits
    with pytest.raises(FormError, match=r"x\.test \(direction\).*strong = weak"):
        claim(forms.DIRECTION, at_least("edge", 0.2, 0.0))
    with pytest.raises(FormError, match="direction"):
        claim(forms.DIRECTION, between("edge", (-1.0, 1.0), (-1.0, 1.0)))


def test_a_bound_needs_a_number():
    claim(forms.BOUND, at_least("gap", 0.2, 0.0, strict=True))
    claim(forms.BOUND, at_least("radius", 0.4, 0.4))  # a bound taken as stated
    with pytest.raises(FormError, match=r"\(bound\).*declare the form direction"):
        claim(forms.BOUND, POS)


def test_an_equivalence_needs_a_finite_margin_around_0_and_its_basis():
    basis = "the passage contrasts ERM with a robust gap above 20 points"
    claim(forms.EQUIVALENCE, between("d", (-0.05, 0.05), (-0.1, 0.1), basis=basis))
    with pytest.raises(FormError, match="source's own scale"):
        claim(forms.EQUIVALENCE, between("d", (-0.01, 0.01), (-0.03, 0.03)))
    with pytest.raises(FormError, match="finite margin around 0"):
        claim(forms.EQUIVALENCE, at_most("d", 0.01, 0.03, basis=basis))
    with pytest.raises(FormError, match="finite margin around 0"):
        claim(forms.EQUIVALENCE, between("d", (0.1, 0.2), (0.0, 0.3), basis=basis))


def test_an_asymptotic_claim_takes_a_constant_only_with_its_quote():
    claim(forms.ASYMPTOTIC, POS)  # the trend's direction
    with pytest.raises(FormError, match="fixes no constant"):
        claim(forms.ASYMPTOTIC, between("slope ratio", (0.9, 1.1), (0.0, math.inf)))
    quoted = between("slope", (-0.55, -0.45), (-math.inf, 0.0), basis="delta = Omega(sqrt(d/k))")
    claim(forms.ASYMPTOTIC, quoted)


def test_an_unknown_form_is_refused_naming_the_forms():
    with pytest.raises(FormError, match="'vibes' is not one of"):
        claim("vibes", POS)


# ---- the measurement kind a form needs, checked when the claim is judged ---------------------
def test_an_asymptotic_claim_measured_at_one_point_is_refused():
    c = claim(forms.ASYMPTOTIC, POS)
    with pytest.raises(FormError, match=r"measured as a level.*judged on trend"):
        c.verdict(Measurement((0.3, 0.4, 0.5)))
    with pytest.raises(FormError, match="names the variable"):
        c.verdict(Measurement((0.3, 0.4, 0.5), kind="trend"))
    # a trend along the checkpoints is judged as any interval: (3, 4, 5): [1.52, 6.48] > 0
    assert c.verdict(trend(Measurement((3.0, 4.0, 5.0)), "checkpoints")).verdict == HOLDS


def test_an_existential_claim_measured_as_one_average_is_refused():
    c = claim(forms.EXISTENTIAL, POS)
    with pytest.raises(FormError, match=r"\(existential\): measured as a level.*cells"):
        c.verdict(Measurement((-1.0, 0.0, 5.0)))
    with pytest.raises(FormError, match=r"\(direction\): measured as a cells"):
        claim(forms.DIRECTION, POS).verdict(per_cell([("a", Measurement((1.0, 2.0, 3.0)))]))


# ---- per-cell decisions, by hand -------------------------------------------------------------
def cells(**means: float) -> Measurement:
    """One cell per keyword: the values mean - 1, mean, mean + 1 (sd 1) on seeds 0-2."""
    labels = ("seed 0", "seed 1", "seed 2")
    return per_cell([(k, Measurement((v - 1, v, v + 1), labels=labels)) for k, v in means.items()])


def test_the_bonferroni_level_and_interval_by_hand():
    assert corrected_level(0.95, 3) == pytest.approx(1 - 0.05 / 3)
    assert t2(0.975) == pytest.approx(4.3027, abs=1e-4)
    half = t2(1 - 0.05 / 6) / math.sqrt(3)  # 7.649 / sqrt 3 = 4.416
    assert half == pytest.approx(4.416, abs=1e-3)
    m = cells(a=2.0, c=4.0, d=0.0)
    iv = dict(m.cells)["c"].ci(corrected_level(0.95, 3))
    assert (iv.lo, iv.hi) == pytest.approx((4 - half, 4 + half))


def test_existential_a_cell_that_holds_uncorrected_does_not_decide_after_correction():
    """Cell c (3, 4, 5): 4 -+ 4.303 / sqrt 3 = [1.516, 6.484] > 0 at 95 %, but corrected for 3
    cells 4 -+ 4.416 = [-0.416, 8.416] straddles 0; cells a (mean 2) and d (mean 0) straddle
    too: inconclusive, not holds."""
    m = cells(a=2.0, c=4.0, d=0.0)
    assert forms.decide(POS, dict(m.cells)["c"]).verdict == HOLDS  # uncorrected
    got = judge(forms.EXISTENTIAL, POS, m)
    assert got.verdict == INCONCLUSIVE
    assert "undecided in 3 of 3 cells: a, c, d" in got.reason
    assert "Bonferroni over 3 cells, each at 98.33 %" in got.reason


def test_existential_holds_if_some_cell_shows_it_and_names_the_cells():
    """Cell b (10, 11, 12): 11 -+ 4.416 = [6.584, 15.42] > 0: holds, named; the mean over the
    cells (13 / 3) is not what decides."""
    m = cells(a=2.0, b=11.0, d=-20.0)
    got = judge(forms.EXISTENTIAL, POS, m)
    assert got.verdict == HOLDS
    assert got.reason.startswith("holds in 1 of 3 cells: b (")
    assert got.cell == "b"
    half = t2(1 - 0.05 / 6) / math.sqrt(3)
    assert (got.interval.lo, got.interval.hi) == pytest.approx((11 - half, 11 + half))


def test_existential_fails_only_if_every_cell_is_outside_and_weaker_if_one_is_weak():
    m = cells(a=-10.0, b=-20.0, d=-6.0)  # d: [-10.4, -1.58]; every cell below 0
    got = judge(forms.EXISTENTIAL, POS, m)
    assert got.verdict == FAILS and "no cell shows it: d" in got.reason  # the closest
    rule = at_least("x", 20.0, 0.0)
    assert judge(forms.EXISTENTIAL, rule, cells(a=11.0, b=-20.0, d=30.0)).verdict == HOLDS
    got = judge(forms.EXISTENTIAL, rule, cells(a=11.0, b=-20.0, d=2.0))
    assert got.verdict == WEAKER and "a (" in got.reason  # a: [6.58, 15.4] in (0, 20)


def test_universal_holds_in_every_cell_and_fails_where_one_corrected_cell_fails():
    assert judge(forms.UNIVERSAL, POS, cells(a=5.0, b=11.0)).verdict == HOLDS  # 95 %: > 0
    got = judge(forms.UNIVERSAL, POS, cells(a=5.0, b=11.0, d=-10.0))
    assert got.verdict == FAILS and "does not hold in 1 of 3 cells: d" in got.reason
    got = judge(forms.UNIVERSAL, POS, cells(a=5.0, b=11.0, d=1.0))
    assert got.verdict == INCONCLUSIVE and "d" in got.reason


def test_a_per_cell_verdict_is_fragile_when_one_seed_left_out_of_every_cell_changes_it():
    """Cells (1, 8, 9) and (0, 9, 10): leaving seed 0 out of every cell gives (8, 9) and
    (9, 10); each subset is judged per cell, corrected, as the whole."""
    labels = ("seed 0", "seed 1", "seed 2")
    m = per_cell(
        [("a", Measurement((1.0, 8.0, 9.0), labels=labels)),
         ("b", Measurement((0.0, 9.0, 10.0), labels=labels))]
    )  # fmt: skip
    subs = dict(m.leave_one_out())
    assert set(subs) == set(labels)
    assert dict(subs["seed 0"].cells)["a"].values == (8.0, 9.0)
    c = claim(forms.EXISTENTIAL, POS)
    frag = c.fragility(m)
    # every seed: a is 6 -+ 7.649 x sqrt(19) / sqrt 3 = [-13.2, 25.2], inconclusive; without
    # seed 0: t(1) at 1 - 0.05/4 is tan(0.4875 pi) = 25.45, a: 8.5 -+ 25.45 x 0.707 / sqrt 2
    # = [-4.2, 21.2], still inconclusive, and so without seed 1 or 2: not fragile
    assert c.verdict(m).verdict == INCONCLUSIVE
    assert frag.fragile is False


def test_a_pooled_slope_is_a_trend_along_its_variable():
    from ibrobust.claims.measurement import pooled_slope

    m = pooled_slope([1, 2, 3, 1, 2, 3], [1, 2, 3.1, 2, 3, 4.2], [0, 0, 0, 1, 1, 1],
                     "pairs", along="log n")  # fmt: skip
    assert m.kind == "trend" and m.along == "log n"
    assert m.ci().center == pytest.approx(slope_interval(
        [1, 2, 3, 1, 2, 3], [1, 2, 3.1, 2, 3, 4.2], groups=[0, 0, 0, 1, 1, 1]).center)  # fmt: skip
