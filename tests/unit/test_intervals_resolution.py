"""The measurement's resolution in its interval: a value read off a grid widens the interval
by its read-off bracket, and the verdict's reason says when only a finer measurement decides
(ibrobust.claims.intervals.widened / resolution_spans / units_needed, rules.decide)."""

import math

import pytest

from ibrobust.claims.intervals import Interval, resolution_spans, units_needed, widened
from ibrobust.claims.measurement import Measurement
from ibrobust.claims.rules import between, decide
from ibrobust.claims.verdicts import HOLDS, WEAKER

T_975_1 = 12.706204736174707  # t(0.975, 1 df)


def test_brackets_widen_the_t_interval_by_the_mean_bracket():
    # values 1.0, 1.2 (mean 1.1, sd 0.1414): t half-width 12.706 x 0.1414 / sqrt 2 = 1.2706;
    # brackets [0.9, 1.1] and [1.1, 1.3]: mean bracket [1.0, 1.2] -> 0.1 below, 0.1 above
    m = Measurement((1.0, 1.2), brackets=((0.9, 1.1), (1.1, 1.3)), resolution="grid step 0.2")
    iv = m.ci()
    assert m.readoff == pytest.approx((0.1, 0.1))
    assert (iv.lo, iv.hi) == pytest.approx((1.1 - 1.27062 - 0.1, 1.1 + 1.27062 + 0.1), abs=1e-4)
    assert iv.readoff == pytest.approx((0.1, 0.1)) and iv.center == pytest.approx(1.1)
    assert iv.method == "t over seeds + read-off grid step 0.2"
    # an asymmetric cell: 0.349 interpolated in [0.3, 0.4] -> 0.049 below, 0.051 above
    a = Measurement((0.349, 0.349), brackets=((0.3, 0.4),) * 2)
    assert (a.ci().lo, a.ci().hi) == pytest.approx((0.3, 0.4))


def test_brackets_must_contain_their_values():
    with pytest.raises(ValueError, match="outside its read-off bracket"):
        Measurement((1.0, 2.0), brackets=((0.9, 1.1), (2.1, 2.2)))
    with pytest.raises(ValueError, match="1 brackets for 2 values"):
        Measurement((1.0, 2.0), brackets=((0.9, 1.1),))


def test_leaving_a_unit_out_keeps_its_bracket_out_too():
    m = Measurement((1.0, 1.1, 1.2), brackets=((1.0, 1.0), (1.0, 1.2), (1.2, 1.2)))
    (_, sub), *_ = m.leave_one_out()
    assert sub.brackets == ((1.0, 1.2), (1.2, 1.2))


def test_units_needed_leaves_the_read_off_part_out():
    # a bootstrap interval [0.7, 1.3] around 1.0 over 10 points, widened by 0.05 below:
    # [0.65, 1.3]; threshold 0.9 is 0.1 below the center, 0.05 of it read-off, so the
    # sampling half 0.3 must shrink to 0.05: 10 x (0.3 / 0.05)^2 = 360 units (361 where the
    # float quotient lands a hair above 36)
    base = Interval(0.7, 1.3, 1.0, 10, "points", "bootstrap over points")
    iv = widened(base, 0.05, 0.0)
    assert not resolution_spans(iv, 0.9)
    assert units_needed(iv, 0.9) in (360, 361)
    # the threshold within the read-off bracket [0.95, 1.0]: no number of units decides
    assert resolution_spans(iv, 0.96) and units_needed(iv, 0.96) is None
    # no read-off above: 1.2 is decided by units as before, n (0.3 / 0.2)^2 = 22.5 -> 23
    assert not resolution_spans(iv, 1.2) and units_needed(iv, 1.2) == 23


def test_decide_says_a_finer_measurement_would_decide():
    """prelu.relu_radius's case: 1.103 per seed, read in the grid cell [0.3, 0.4] x sqrt(10)
    = [0.949, 1.265]; the strong band [0.9, 1.1]: the resolution alone spans 1.1."""
    s10 = math.sqrt(10)
    rule = between("critical radius x sqrt(K)", (0.9, 1.1), (0.0, 2.236))
    m = Measurement(
        (1.097, 1.109), brackets=((0.3 * s10, 0.4 * s10),) * 2, resolution="grid cell 0.1"
    )
    d = decide(rule, m)
    assert d.verdict == WEAKER
    assert "a finer measurement would decide, no number of seeds does" in d.reason
    assert "(grid cell 0.1)" in d.reason and "seeds would decide" not in d.reason
    # the same values without brackets: the old reason (seeds would decide)
    d0 = decide(rule, Measurement((1.097, 1.109)))
    assert "seeds would decide" in d0.reason
    # refined: brackets 1e-3 / 0.316 wide around 1.0 and 1.01: holds
    w = 0.0005 * s10
    fine = Measurement((1.0, 1.01), brackets=((1.0 - w, 1.0 + w), (1.01 - w, 1.01 + w)))
    assert decide(rule, fine).verdict == HOLDS


def test_decide_names_both_when_units_or_resolution_would_decide():
    # [0.7, 1.3] around 1.0 (10 points) widened 0.05 below: threshold 0.68 is outside the
    # sampling part (0.7) but inside the widened interval (0.65), beyond the read-off bracket
    rule = between("x", (0.68, 2.0), (0.0, 3.0))
    iv = Interval(0.7, 1.3, 1.0, 10, "points", "bootstrap over points")
    m = Measurement((1.0,), interval=iv, brackets=((0.95, 1.0),), resolution="cell")
    d = decide(rule, m)
    assert d.verdict == WEAKER
    # sampling must fit in 0.32 - 0.05 = 0.27: 10 x (0.3 / 0.27)^2 = 12.3 -> 13
    assert "about 13 points at this resolution (cell) would decide" in d.reason
    assert d.reason.endswith("or a finer measurement")
