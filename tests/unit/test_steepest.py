"""SteepestDescent and steepest_direction against hand-computed steps."""

from __future__ import annotations

import pytest
import torch

from ibrobust.seeding import torch_generator
from ibrobust.updates import SteepestDescent, dual_norm, steepest_direction


def one_step(w0, g, lr=0.1, **kw):
    """Parameter after one SteepestDescent step with gradient g."""
    w = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
    w.grad = torch.tensor(g, dtype=torch.float64)
    opt = SteepestDescent([w], lr=lr, **kw)
    opt.step()
    return w.detach()


def test_l2_is_gradient_descent():
    w = one_step([1.0, 2.0], [0.5, -1.0], norm="l2")
    torch.testing.assert_close(w, torch.tensor([0.95, 2.1], dtype=torch.float64))


def test_l2_unit_is_normalised_gradient():
    w = one_step([0.0, 0.0], [3.0, -4.0], norm="l2", scale="unit")
    torch.testing.assert_close(w, torch.tensor([-0.06, 0.08], dtype=torch.float64))


def test_l1_moves_only_the_largest_coordinate_by_its_gradient():
    # ||g||_inf * sign(g_1) e_1 = -1 * e_1
    w = one_step([1.0, 2.0, 3.0], [0.5, -1.0, 0.25], norm="l1")
    torch.testing.assert_close(w, torch.tensor([1.0, 2.1, 3.0], dtype=torch.float64))
    w = one_step([1.0, 2.0, 3.0], [0.5, -2.0, 0.25], norm="l1", scale="unit")
    torch.testing.assert_close(w, torch.tensor([1.0, 2.1, 3.0], dtype=torch.float64))


def test_l1_tie_split_moves_tied_coordinates_equally():
    # g = (1, -1, 0.5): tie between 0 and 1 -> ||g||_inf * (1/2, -1/2, 0)
    w = one_step([0.0, 0.0, 0.0], [1.0, -1.0, 0.5], norm="l1", tie="split")
    torch.testing.assert_close(w, torch.tensor([-0.05, 0.05, 0.0], dtype=torch.float64))


def test_l1_tie_first_moves_lowest_flat_index():
    w = one_step([0.0, 0.0, 0.0], [0.5, -1.0, 1.0], norm="l1", tie="first")
    torch.testing.assert_close(w, torch.tensor([0.0, 0.1, 0.0], dtype=torch.float64))


def test_linf_dual_is_l1_scaled_sign():
    # ||g||_1 = 1.75
    w = one_step([0.0, 0.0, 0.0], [0.5, -1.0, 0.25], norm="linf")
    torch.testing.assert_close(w, torch.tensor([-0.175, 0.175, -0.175], dtype=torch.float64))


def test_linf_unit_is_sign_descent_and_zero_gradient_stays():
    w = one_step([1.0, 1.0, 1.0], [0.5, -1.0, 0.0], norm="linf", scale="unit")
    torch.testing.assert_close(w, torch.tensor([0.9, 1.1, 1.0], dtype=torch.float64))


@pytest.mark.parametrize("norm", ["l2", "l1", "linf"])
def test_zero_gradient_does_not_move(norm):
    for scale in ("dual", "unit"):
        w = one_step([1.0, -2.0], [0.0, 0.0], norm=norm, scale=scale)
        torch.testing.assert_close(w, torch.tensor([1.0, -2.0], dtype=torch.float64))


def make_two_tensors(ga, gb, **kw):
    a = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    b = torch.nn.Parameter(torch.zeros(1, 1, dtype=torch.float64))
    c = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))  # no gradient: skipped
    a.grad = torch.tensor(ga, dtype=torch.float64)
    b.grad = torch.tensor(gb, dtype=torch.float64)
    opt = SteepestDescent([a, b, c], lr=0.1, **kw)
    opt.step()
    return a.detach(), b.detach(), c.detach()


def test_cd_picks_the_largest_coordinate_across_all_tensors():
    a, b, c = make_two_tensors([0.5, -1.0], [[2.0]], norm="l1")
    torch.testing.assert_close(a, torch.zeros(2, dtype=torch.float64))
    torch.testing.assert_close(b, torch.tensor([[-0.2]], dtype=torch.float64))
    torch.testing.assert_close(c, torch.ones(3, dtype=torch.float64))
    # a tie across tensors: split, and "first" picks the earlier tensor
    a, b, _ = make_two_tensors([0.5, -2.0], [[2.0]], norm="l1", tie="split")
    torch.testing.assert_close(a, torch.tensor([0.0, 0.1], dtype=torch.float64))
    torch.testing.assert_close(b, torch.tensor([[-0.1]], dtype=torch.float64))
    a, b, _ = make_two_tensors([0.5, -2.0], [[2.0]], norm="l1", tie="first")
    torch.testing.assert_close(a, torch.tensor([0.0, 0.2], dtype=torch.float64))
    torch.testing.assert_close(b, torch.zeros(1, 1, dtype=torch.float64))


def test_sign_descent_scales_by_the_joint_l1_norm():
    a, b, _ = make_two_tensors([0.5, -1.0], [[2.0]], norm="linf")  # ||g||_1 = 3.5
    torch.testing.assert_close(a, torch.tensor([-0.35, 0.35], dtype=torch.float64))
    torch.testing.assert_close(b, torch.tensor([[-0.35]], dtype=torch.float64))


def test_l2_unit_normalises_over_all_tensors():
    a, b, _ = make_two_tensors([0.0, 3.0], [[-4.0]], norm="l2", scale="unit")  # ||g||_2 = 5
    torch.testing.assert_close(a, torch.tensor([0.0, -0.06], dtype=torch.float64))
    torch.testing.assert_close(b, torch.tensor([[0.08]], dtype=torch.float64))


def test_adaptive_step_is_min_of_cap_and_c_over_loss():
    g = torch.tensor([1.0, -2.0], dtype=torch.float64)
    for loss, eta in ((0.5, 0.2), (0.01, 1.0)):  # c / L = 0.2, and c / L = 10 > lr_max = 1
        w = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
        w.grad = g.clone()
        SteepestDescent([w], lr=123.0, adaptive=True, c=0.1, lr_max=1.0).step(loss=loss)
        torch.testing.assert_close(w.detach(), -eta * g)
    # log_loss: L = e^-1000 underflows, c / L does not (capped by lr_max)
    w = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    w.grad = g.clone()
    SteepestDescent([w], lr=1.0, adaptive=True, c=0.1, lr_max=7.0).step(log_loss=-1000.0)
    torch.testing.assert_close(w.detach(), -7.0 * g)
    # lr_max defaults to lr
    w = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    w.grad = g.clone()
    SteepestDescent([w], lr=2.0, adaptive=True, c=0.1).step(loss=1e-6)
    torch.testing.assert_close(w.detach(), -2.0 * g)


def test_adaptive_step_with_closure_on_a_quadratic():
    w = torch.nn.Parameter(torch.tensor([1.0, -1.0], dtype=torch.float64))
    opt = SteepestDescent([w], lr=10.0, norm="l2", adaptive=True, c=0.5)

    def closure():
        opt.zero_grad()
        loss = (w**2).sum()  # = 2, grad = (2, -2)
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss.detach()) == 2.0
    torch.testing.assert_close(
        w.detach(), torch.tensor([0.5, -0.5], dtype=torch.float64)
    )  # eta = 0.25


def test_adaptive_without_loss_raises():
    w = torch.nn.Parameter(torch.zeros(2))
    w.grad = torch.ones(2)
    with pytest.raises(ValueError, match="adaptive"):
        SteepestDescent([w], lr=1.0, adaptive=True).step()


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        (dict(norm="l3"), "norm"),
        (dict(scale="half"), "scale"),
        (dict(tie="random"), "tie"),
        (dict(lr=-1.0), "lr"),
        (dict(c=0.0), "c"),
    ],
)
def test_bad_arguments_name_the_key(kwargs, key):
    w = torch.nn.Parameter(torch.zeros(2))
    kw = dict(lr=0.1) | kwargs
    with pytest.raises(ValueError, match=key):
        SteepestDescent([w], **kw)


def test_param_groups_must_share_the_geometry():
    a, b = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(ValueError, match="norm"):
        SteepestDescent([{"params": [a]}, {"params": [b], "norm": "l1"}], lr=0.1)


@pytest.mark.parametrize("norm", ["l2", "l1", "linf"])
def test_dual_scaled_direction_is_steepest(norm):
    """<g, Delta> = ||g||_*^2 and ||Delta|| = ||g||_* for the dual-scaled step (batched)."""
    g = torch.randn(5, 7, generator=torch_generator(0, "steepest", norm), dtype=torch.float64)
    delta = steepest_direction(g, norm)  # (5, 7)
    primal = {"l2": "l2", "l1": "linf", "linf": "l1"}[norm]  # dual_norm(., dual) = primal norm
    torch.testing.assert_close((g * delta).sum(-1), dual_norm(g, norm) ** 2)
    torch.testing.assert_close(dual_norm(delta, primal), dual_norm(g, norm))
    # rows are independent problems
    for b in range(5):
        torch.testing.assert_close(delta[b], steepest_direction(g[b], norm))
