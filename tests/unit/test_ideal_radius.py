"""The ideal pReLU classifier's per-point l2 radius (ibrobust.analysis.ideal_radius) against
hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ibrobust.analysis.ideal_radius import mixture_coordinates, prelu_radius, robust_accuracy

SIGN = np.array([1, 1, 1, 1, 1, 1, -1, -1, -1, -1], dtype=float)  # the study's 6/4 split


def one(z, y=1, p=3.0, sign=SIGN):
    lo, hi = prelu_radius(np.asarray([z], float), sign, np.array([y]), p)
    return float(lo[0]), float(hi[0])


def point(**coords):
    z = np.zeros(10)
    for k, v in coords.items():
        z[int(k[1:])] = v
    return z


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0])
def test_noiseless_centre_is_half_the_centre_distance(p):
    # lower mu_0's coordinate to s, raise one other-class one to s: (1-s)^2 + s^2, least at 1/2
    lo, hi = one(point(c0=1.0), p=p)
    assert lo == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    assert hi == pytest.approx(1 / math.sqrt(2), abs=1e-6)


def test_negative_class_point_sees_the_positive_centres():
    lo, hi = one(point(c7=1.0), y=-1)
    assert (lo, hi) == pytest.approx((1 / math.sqrt(2),) * 2, abs=1e-6)


def test_shifted_own_and_negative_other_coordinates():
    # z = (1 + a) e_0 - b on every other-class coordinate: distance to the line u_0 = u_l
    # from (1 + a, -b) is (1 + a + b) / sqrt(2)
    z = point(c0=1.1, c6=-0.2, c7=-0.2, c8=-0.2, c9=-0.2)
    assert one(z, p=4.0) == pytest.approx((1.3 / math.sqrt(2),) * 2, abs=1e-6)


def test_far_other_class_the_cheapest_flip_drives_the_own_coordinate_to_zero():
    # other-class coordinates all at -2: raising one costs more than lowering mu_0's to 0
    z = point(c0=1.0, c6=-2.0, c7=-2.0, c8=-2.0, c9=-2.0)
    assert one(z) == pytest.approx((1.0, 1.0), abs=1e-6)


def test_two_own_coordinates_share_the_lowering():
    # z = e_0 + e_1, p = 3: by symmetry both fall to u, one other rises to 2^(1/3) u:
    # 2 (1 - u)^2 + 2^(2/3) u^2, least at u = 4 / (4 + 2^(5/3))
    u = 4 / (4 + 2 ** (5 / 3))
    r = math.sqrt(2 * (1 - u) ** 2 + 2 ** (2 / 3) * u**2)
    assert one(point(c0=1.0, c1=1.0)) == pytest.approx((r, r), abs=1e-6)


def test_positive_other_coordinate_is_bracketed():
    # K = 2: the boundary is the line u_0 = u_1 (both > 0); from (0.8, 0.3) the exact radius
    # is 0.5 / sqrt(2); the single-raise upper bound finds it, the lower bound sits below
    lo, hi = one([0.8, 0.3], sign=np.array([1.0, -1.0]))
    assert hi == pytest.approx(0.5 / math.sqrt(2), abs=1e-6)
    assert lo <= 0.5 / math.sqrt(2) < 0.8 / math.sqrt(2)


def test_misclassified_point_has_radius_zero():
    assert one(point(c0=0.2, c6=0.5)) == (0.0, 0.0)


def test_p_below_two_is_refused():
    with pytest.raises(ValueError, match="p must be >= 2"):
        one(point(c0=1.0), p=1.0)


def test_mixture_and_robust_accuracy():
    z, sign, y = mixture_coordinates(10, (0, 1, 2, 3, 4, 5), 0.0, 1.0, 50, seed=3)
    assert set(np.abs(z).sum(1)) == {1.0}
    assert np.array_equal(y, sign[np.abs(z).argmax(1)])
    lo, hi = prelu_radius(z, sign, y, 3.0)
    # every noiseless point has radius 1/sqrt(2): robust just inside it, not just outside
    assert robust_accuracy(lo, hi, 0.70) == (1.0, 1.0)
    assert robust_accuracy(lo, hi, 0.71) == (0.0, 0.0)
    with pytest.raises(ValueError, match="positive"):
        mixture_coordinates(2, (0, 1), 0.1, 1.0, 5, seed=0)
