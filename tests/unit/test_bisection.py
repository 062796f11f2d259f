"""Per-point critical radii by bisection (ibrobust.attacks.bisection, ibrobust.stages.radii)
against a linear model whose exact l2 radius is |w.x + b| / ||w||."""

import math

import pytest
import torch
from torch import nn

from ibrobust.attacks.bisection import (
    bisect_radii,
    crossing_bracket,
    grid_brackets,
    worst_case_oracle,
)
from ibrobust.attacks.suite import AttackContext, evaluate_attacks


class Linear(nn.Module):
    """score(x) = w.x + b (one head): binary_score for the attacks' binary task."""

    def __init__(self, w, b):
        super().__init__()
        self.lin = nn.Linear(len(w), 1, dtype=torch.float64)
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([w], dtype=torch.float64))
            self.lin.bias.fill_(b)

    def binary_score(self, x):
        return self.lin(x).squeeze(1)

    def forward(self, x):
        s = self.binary_score(x)
        return torch.stack((-s / 2, s / 2), 1)


def _points():
    # w = (3, 4), ||w|| = 5, b = 1: the exact radius of x with label sign(w.x + b) is
    # |w.x + b| / 5: (0, 0) -> 0.2, (1, 0) -> 0.8, (0, -1) -> 0.6, (-1, 1) -> 0.4
    x = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, -1.0], [-1.0, 1.0]], dtype=torch.float64)
    y = torch.tensor([1.0, 1.0, -1.0, 1.0], dtype=torch.float64)
    return Linear([3.0, 4.0], 1.0), x, y, torch.tensor([0.2, 0.8, 0.6, 0.4], dtype=torch.float64)


def test_grid_brackets_are_the_cells_of_the_first_flip():
    # 3 points, radii 0, 0.5, 1 (given out of order); two attacks: the worst case flips
    # point 0 at 0.5 (attack b), point 1 at 1 (attack a), never point 2; point 3 clean-wrong
    a = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0], [1, 0, 1, 0]], dtype=torch.bool)  # radii order
    b = torch.tensor([[1, 1, 1, 0], [0, 1, 1, 0], [0, 1, 1, 0]], dtype=torch.bool)
    radii = [0.0, 0.5, 1.0]
    lo, hi = grid_brackets({"a": a, "b": b}, radii)
    assert lo.tolist() == [0.0, 0.5, 1.0, 0.0]
    assert hi.tolist() == [0.5, 1.0, math.inf, 0.0]
    perm = [2, 0, 1]  # the same masks with the radii listed 1, 0, 0.5
    lo2, hi2 = grid_brackets({"a": a[perm], "b": b[perm]}, [radii[i] for i in perm])
    assert lo2.tolist() == lo.tolist() and hi2.tolist() == hi.tolist()


def test_bisection_with_an_exact_oracle_finds_the_linear_radius():
    _, _, _, exact = _points()
    lo0 = torch.tensor([0.0, 0.5, 0.5, 0.3], dtype=torch.float64)
    hi0 = torch.tensor([0.5, 1.0, 1.0, 0.5], dtype=torch.float64)
    calls = []

    def oracle(idx, eps):
        calls.append(eps)
        return exact[idx] <= eps

    lo, hi = bisect_radii(oracle, lo0, hi0, 1e-3)
    assert ((hi - lo) <= 1e-3).all()
    assert ((lo < exact) & (exact <= hi)).all()
    # points 1 and 2 share their cell (0.5, 1]: their first midpoint 0.75 is one call
    assert calls.count(0.75) == 1


def test_bisection_keeps_censored_and_exact_points():
    lo, hi = bisect_radii(
        lambda idx, eps: torch.ones(len(idx), dtype=torch.bool),
        torch.tensor([1.5, 0.0]), torch.tensor([math.inf, 0.0]), 1e-3,
    )  # fmt: skip
    assert lo.tolist() == [1.5, 0.0] and hi.tolist() == [math.inf, 0.0]
    with pytest.raises(ValueError, match="tolerance"):
        bisect_radii(lambda i, e: None, lo, hi, 0.0)


def test_pgd_worst_case_bisection_recovers_the_exact_linear_radius():
    """The project's own l2 PGD (margin loss) and the grid suite on the linear model: the
    grid cells contain the exact radii, and bisection to 1e-3 under the worst case over
    {pgd, a no-op attack} brackets each exact radius |w.x + b| / ||w|| (PGD on a linear
    score finds the boundary exactly: the radius is attained at the projection)."""
    model, x, y, exact = _points()
    specs = {
        "pgd": {"kind": "pgd", "norm": "l2", "loss": "margin", "steps": 20, "restarts": 1,
                "step_size": 0.2},
        "pgd_one_step": {"kind": "pgd", "norm": "l2", "loss": "margin", "steps": 1,
                           "restarts": 1, "step_size": 0.01},
    }  # fmt: skip
    ctx = AttackContext(task="binary")
    gen = torch.Generator().manual_seed(0)
    radii = [0.0, 0.25, 0.5, 0.75, 1.0]
    fine = torch.zeros(len(y), dtype=torch.long)
    _, masks = evaluate_attacks(model, x, y, fine, radii, specs, ctx, gen)
    glo, ghi = grid_brackets(masks, radii)
    assert ((glo < exact) & (exact <= ghi)).all()
    oracle = worst_case_oracle(model, x, y, fine, specs, ctx, gen)
    lo, hi = bisect_radii(oracle, glo, ghi, 1e-3)
    assert ((hi - lo) <= 1e-3).all()
    assert (lo <= exact + 1e-9).all() and (exact <= hi + 1e-6).all()


def test_crossing_is_the_order_statistic_of_the_brackets():
    # 4 points: radius exceeds r for > half of them until the 2nd smallest (k = ceil(0.5 * 4))
    lo = torch.tensor([0.40, 0.10, 0.30, 0.20], dtype=torch.float64)
    hi = torch.tensor([0.41, 0.11, 0.31, 0.21], dtype=torch.float64)
    c = crossing_bracket(lo, hi)
    assert (c.lo, c.hi) == (0.20, 0.21) and c.value == pytest.approx(0.205)
    # level 0.75: robust accuracy <= 0.75 at the 1st smallest
    assert crossing_bracket(lo, hi, 0.75).lo == 0.10
    # 5 points: k = 3
    c5 = crossing_bracket(torch.arange(5.0), torch.arange(5.0) + 0.5)
    assert (c5.lo, c5.hi) == (2.0, 2.5)
    cens = crossing_bracket(torch.tensor([1.0, 1.5, 1.5]), torch.tensor([1.1, math.inf, math.inf]))
    assert cens.censored and cens.value == 1.5
