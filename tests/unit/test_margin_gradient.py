"""Margin vs input gradient per point, on hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from ibrobust.analysis.margin_gradient import (
    breaking_radius,
    first_order_distance,
    margin_and_gradient,
    point_table,
    robust_accuracy,
    summarize,
)
from ibrobust.attacks.suite import AttackContext
from ibrobust.models.two_layer import TwoLayerFixed
from ibrobust.seeding import torch_generator


class Linear(nn.Module):
    """F(x) = <w, x> + b as a model with a binary score."""

    def __init__(self, w, b):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w))
        self.b = nn.Parameter(torch.tensor(b))

    def forward(self, x):
        s = self.binary_score(x)
        return torch.stack([s / 2, -s / 2], 1)

    def binary_score(self, x):
        return x @ self.w + self.b


def test_linear_model_first_order_distance_is_the_distance_to_the_boundary():
    net = Linear([3.0, 4.0], -5.0)
    x = torch.tensor([[1.0, 2.0], [0.0, 0.0], [3.0, 0.0]])
    y = torch.tensor([1.0, -1.0, 1.0])
    q, g = margin_and_gradient(net, x, y)
    # F = 3 + 8 - 5 = 6; F(0) = -5 (y = -1: q = 5); F = 9 - 5 = 4; ||w|| = 5
    assert q.tolist() == pytest.approx([6.0, 5.0, 4.0])
    assert g.tolist() == pytest.approx([5.0, 5.0, 5.0])
    assert first_order_distance(q, g).tolist() == pytest.approx([1.2, 1.0, 0.8])
    assert all(p.requires_grad for p in net.parameters())  # restored after


def _two_layer(rows_pos, rows_neg):
    """Binary two-layer net (m neurons per head, no bias) with the given first-layer rows."""
    w = torch.stack([torch.tensor(rows_pos), torch.tensor(rows_neg)])  # (2, m, d)
    return TwoLayerFixed(w, torch.zeros(2, w.shape[1]), torch.tensor([1.0, -1.0]))


def test_averaging_net_has_a_similar_margin_but_a_larger_gradient():
    # d = k = 4, J+ = {e0, e1}, J- = {e2, e3}, m = 2; the point x = e0 (class 0, y = +1)
    s = 1 / math.sqrt(2)
    averaging = _two_layer([[s, s, 0, 0]] * 2, [[0, 0, s, s]] * 2)
    decoupled = _two_layer([[1.0, 0, 0, 0], [0, 1.0, 0, 0]], [[0, 0, 1.0, 0], [0, 0, 0, 1.0]])
    x, y = torch.tensor([[1.0, 0, 0, 0]]), torch.tensor([1.0])
    qa, ga = margin_and_gradient(averaging, x, y)
    qd, gd = margin_and_gradient(decoupled, x, y)
    # averaging: both + neurons fire at 1/sqrt2: q = 1/sqrt2; grad = (1/2)(2 w) = (e0+e1)/sqrt2
    assert qa.item() == pytest.approx(s) and ga.item() == pytest.approx(1.0)
    # decoupled: only the e0 neuron fires: q = 1/2, grad = e0 / 2
    assert qd.item() == pytest.approx(0.5) and gd.item() == pytest.approx(0.5)
    assert first_order_distance(qa, ga).item() == pytest.approx(s)
    assert first_order_distance(qd, gd).item() == pytest.approx(1.0)


def test_breaking_radius_from_a_correctness_grid():
    radii = [0.0, 0.5, 1.0, 2.0]
    correct = torch.tensor(
        [
            [True, True, False, True],
            [True, False, False, True],
            [True, False, False, True],
            [False, False, False, True],
        ]
    )  # (R, n): points break at 2.0, 0.5, 0.0, never
    assert breaking_radius(correct, radii).tolist() == [2.0, 0.5, 0.0, math.inf]
    # the grid's order does not matter
    perm = [3, 1, 0, 2]
    assert breaking_radius(correct[perm], [radii[i] for i in perm]).tolist() == [
        2.0,
        0.5,
        0.0,
        math.inf,
    ]
    with pytest.raises(ValueError, match="R=3"):
        breaking_radius(correct, radii[:3])


def test_robust_accuracy_from_breaking_radii_is_the_correctness_grid_s_mean():
    """The grid of the test above: correct fractions per radius 3/4 (0: one point wrong),
    2/4 (0.5: one more breaks), 2/4 (1.0), 1/4 (2.0: only the never-broken one)."""
    radii = [0.0, 0.5, 1.0, 2.0]
    correct = torch.tensor(
        [
            [True, True, False, True],
            [True, False, False, True],
            [True, False, False, True],
            [False, False, False, True],
        ]
    )
    acc = robust_accuracy(breaking_radius(correct, radii).tolist(), radii)
    assert acc == {0.0: 0.75, 0.5: 0.5, 1.0: 0.5, 2.0: 0.25}
    assert acc == {r: correct[i].float().mean().item() for i, r in enumerate(radii)}
    assert all(math.isnan(v) for v in robust_accuracy([], radii).values())


def test_point_table_on_a_linear_model_matches_the_exact_distance():
    net = Linear([3.0, 4.0], -5.0)
    x = torch.tensor([[1.0, 2.0], [3.0, 0.0]])  # distances 1.2 and 0.8
    y = torch.tensor([1.0, 1.0])
    spec = {
        "kind": "pgd",
        "norm": "l2",
        "loss": "margin",
        "steps": 20,
        "restarts": 1,
        "step_size": 0.25,
    }
    radii = [0.0, 0.55, 0.75, 0.85, 1.15, 1.25, 2.0]
    table = point_table(
        net,
        x,
        y,
        torch.zeros(2, dtype=torch.long),
        radii,
        {"pgd": spec},
        AttackContext(),
        torch_generator(0, "t"),
    )
    assert table.first_order.tolist() == pytest.approx([1.2, 0.8])
    # PGD finds the boundary at the first grid radius beyond the exact distance
    assert table.breaking_radius.tolist() == [1.25, 0.85]
    assert table["breaking_radius.pgd"].tolist() == [1.25, 0.85]
    assert table.param_norm.tolist() == pytest.approx([math.sqrt(9 + 16 + 25)] * 2)  # ||(w, b)||
    s = summarize(table)
    assert s["frac_correct"] == 1.0 and s["margin.median"] == pytest.approx(5.0)
    assert s["margin_per_param_norm.median"] == pytest.approx(5.0 / math.sqrt(50))
    assert s["grad_norm_per_param_norm.median"] == pytest.approx(5.0 / math.sqrt(50))
    assert s["breaking_over_first_order.median"] == pytest.approx((1.25 / 1.2 + 0.85 / 0.8) / 2)


def test_figure_draws_one_series_per_training_and_readout():
    import pandas as pd

    from ibrobust.studies.feature_averaging.margin_gradient_figure import margin_gradient_figure

    rows = [
        dict(
            label=lab, readout=ro, seed=0, margin=q, grad_norm=1.0, first_order=q, breaking_radius=b
        )
        for lab, ro in (("binary", "sum"), ("multiclass", "sum"), ("multiclass", "log_odds"))
        for q, b in ((10.0, 9.0), (12.0, math.inf), (-1.0, 0.0))
    ]
    fig = margin_gradient_figure(pd.DataFrame(rows), d=1000, k=10)
    left, right = fig.axes[:2]
    assert len(left.collections) == len(right.collections) == 3
    # misclassified points (q <= 0) are left out; unbroken ones drawn at the right edge
    assert [len(c.get_offsets()) for c in right.collections] == [2, 2, 2]
    assert max(c.get_offsets()[:, 0].max() for c in right.collections) == pytest.approx(9.0 * 1.05)
