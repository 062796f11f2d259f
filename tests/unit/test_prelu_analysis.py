"""Study PRELU analysis: ideal classifiers, scale-invariant distance, alignment, radii."""

import math

import pytest
import torch

from ibrobust.analysis.prelu import (
    alignment_summary,
    class_sums,
    ideal_distances,
    ideal_prelu,
    ideal_relu,
    neuron_alignment,
    scaled_distance,
    span_sphere_points,
)
from ibrobust.models.prelu import PreluNet
from ibrobust.studies.prelu.radii import PRELU_ROBUST_RADIUS, relu_nonrobust_radius

# K = 3 centres e1, e2 (positive) and e3 (negative) in D = 3; probe points
#   x1 = (1, 0, 0):          F = 1,       F^(3) = 1
#   x2 = (1, 1, 0)/sqrt 2:   F = sqrt 2,  F^(3) = 2 (1/sqrt 2)^3 = 1/sqrt 2
#   x3 = (0, 0, 1):          F = -1,      F^(3) = -1
MEANS = torch.eye(3, dtype=torch.float64)
SIGN = torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64)
PROBES = torch.tensor(
    [[1, 0, 0], [1 / math.sqrt(2), 1 / math.sqrt(2), 0], [0, 0, 1]], dtype=torch.float64
)


def test_ideal_classifiers_hand_computed():
    torch.testing.assert_close(
        ideal_relu(PROBES, MEANS, SIGN),
        torch.tensor([1.0, math.sqrt(2), -1.0], dtype=torch.float64),
    )
    torch.testing.assert_close(
        ideal_prelu(PROBES, MEANS, SIGN, 3),
        torch.tensor([1.0, 1 / math.sqrt(2), -1.0], dtype=torch.float64),
    )
    mp, mm = class_sums(MEANS, SIGN)
    assert torch.equal(mp, torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)) and torch.equal(
        mm, MEANS[2]
    )


def test_scaled_distance_properties():
    f = ideal_relu(PROBES, MEANS, SIGN)
    for c in (1e-6, 1.0, 37.0):
        assert scaled_distance(c * f, f) == pytest.approx(0.0, abs=1e-12)
    assert scaled_distance(-f, f) == 1.0  # a flipped classifier is not F up to a positive scale
    assert scaled_distance(torch.zeros(3, dtype=torch.float64), f) == 1.0
    # On x1, x2 only: F^(3) = (1, 1/sqrt 2), F = (1, sqrt 2). The best c = <a, b>/|a|^2 =
    # 2/1.5 = 4/3; c a - b = (1/3, -sqrt(2)/3), |.|^2 = 1/3, |b|^2 = 3, so dist = 1/3.
    fp, ff = ideal_prelu(PROBES[:2], MEANS, SIGN, 3), ideal_relu(PROBES[:2], MEANS, SIGN)
    assert scaled_distance(fp, ff) == pytest.approx(1 / 3, rel=1e-12)
    assert scaled_distance(ff, fp) == pytest.approx(1 / 3, rel=1e-12)  # = sin(angle): symmetric
    with pytest.raises(ValueError, match="undefined"):
        scaled_distance(f, torch.zeros(3, dtype=torch.float64))


def test_planted_networks_are_at_distance_zero():
    # p = 1 net with neurons mu_+ and mu_- and v = (1, -1) is exactly F ...
    mp, mm = class_sums(MEANS, SIGN)
    relu_net = PreluNet(
        torch.stack([mp, mm]), torch.tensor([[1.0, -1.0]], dtype=torch.float64), torch.ones(1), 1
    )
    # ... and a p = 3 net with one unit-norm neuron per centre and v = sign is F^(3)
    prelu_net = PreluNet(MEANS, SIGN[None], torch.ones(1), 3)
    x = span_sphere_points(MEANS, 50, torch.Generator().manual_seed(0))
    d1, d3 = (
        ideal_distances(relu_net, x, MEANS, SIGN, 3),
        ideal_distances(prelu_net, x, MEANS, SIGN, 3),
    )
    assert d1["dist_F"] == pytest.approx(0, abs=1e-12) and d1["dist_Fp"] > 0.1
    assert d3["dist_Fp"] == pytest.approx(0, abs=1e-12) and d3["dist_F"] > 0.1


def test_span_sphere_points():
    means = torch.eye(8)[:3] * 2.0
    x = span_sphere_points(means, 100, torch.Generator().manual_seed(1))
    torch.testing.assert_close(x.norm(dim=1), torch.ones(100))
    assert float(x[:, 3:].abs().max()) < 1e-6


def test_alignment_planted_neurons():
    d, k = 20, 10
    means = torch.eye(d)[:k]
    sign = torch.tensor([1.0] * 6 + [-1.0] * 4)
    mp, mm = class_sums(means, sign)
    v_single = sign[None] * 2.0  # (1, K)
    # neurons exactly on the centres (scaled), plus one negligible neuron on mu_+
    w = torch.cat([3.0 * means, 1e-9 * mp[None]])
    al = neuron_alignment(w, torch.cat([v_single, torch.ones(1, 1)], 1), means, sign)
    s = alignment_summary(al)
    assert s["n_active"] == k and s["frac_single"] == 1.0 and s["frac_average"] == 0.0
    assert s["mean_best_cos"] == pytest.approx(1.0)
    assert torch.equal(al.best[:k], torch.arange(k)) and not bool(al.active[k])
    torch.testing.assert_close(
        al.cos_averages[0], torch.tensor([1 / math.sqrt(6), 0.0], dtype=torch.float64)
    )
    # neurons on the class averages (several copies, noisy by 1e-3)
    g = torch.Generator().manual_seed(0)
    w = torch.cat([mp.repeat(5, 1), mm.repeat(3, 1)]) + 1e-3 * torch.randn(8, d, generator=g)
    s = alignment_summary(neuron_alignment(w, torch.ones(1, 8), means, sign))
    assert s["n_active"] == 8 and s["frac_average"] == 1.0 and s["frac_single"] == 0.0


def test_reference_radii():
    assert relu_nonrobust_radius(10) == pytest.approx(0.31622776601683794)
    assert PRELU_ROBUST_RADIUS == pytest.approx(0.7071067811865476)
    assert relu_nonrobust_radius(10) < PRELU_ROBUST_RADIUS
    with pytest.raises(ValueError, match="k must"):
        relu_nonrobust_radius(0)
