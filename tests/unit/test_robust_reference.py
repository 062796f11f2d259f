"""Hand-built robust reference net and its exact l2 radius (ibrobust.models.robust_reference)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from ibrobust.attacks.losses import binary_correct, neg_binary_margin
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.robust_reference import _waterfill_cost, analytic_radius, robust_reference_net
from ibrobust.seeding import numpy_generator, torch_generator

torch.set_num_threads(1)

# d = k = 4, standard basis means of norm 2, J+ = {0, 1}; beta = 1/2 -> threshold b = 1
MEANS4 = 2.0 * torch.eye(4)
SIGN4 = torch.tensor([1.0, 1.0, -1.0, -1.0])


def test_reference_net_structure():
    cfg = ClusterDataConfig(d=30, k=6, n_train=5, n_test=5, mean_norm=4.0)
    data = make_cluster_data(cfg, 0)
    net = robust_reference_net(data.means, data.sign, beta=0.25)
    assert net.weight.shape == (6, 1, 30) and net.bias.shape == (6, 1)
    torch.testing.assert_close(net.weight[:, 0, :], data.means / 4.0)
    torch.testing.assert_close(net.bias, torch.full((6, 1), -1.0))
    assert torch.equal(net.readout, data.sign)
    # on a noiseless point of cluster j only neuron j fires: F = sign_j (||mu|| - b)
    torch.testing.assert_close(net.binary_score(data.means), data.sign * 3.0)
    for beta in (0.0, 1.0, -0.5, 2.0):
        with pytest.raises(ValueError, match="beta"):
            robust_reference_net(data.means, data.sign, beta=beta)


# ---------------------------------------------------------------------------- water-filling


@pytest.mark.parametrize(
    "total, lower, expected",
    [
        (3.0, [0.0, 0.0, 0.0], math.sqrt(3.0)),  # equal share tau = 1
        (3.0, [2.0, 0.0], math.sqrt(5.0)),  # (2, 1)
        (3.0, [0.0, 2.0], math.sqrt(5.0)),  # order of lower bounds is irrelevant
        (1.0, [3.0, 0.0], 3.0),  # lower bound alone already exceeds the total
        (2.0, [0.5, 0.5], math.sqrt(2.0)),  # (1, 1): bounds inactive
        (4.0, [0.0], 4.0),
        (2.35, [0.0, 0.8, 0.05], math.sqrt(0.8**2 + 2 * 0.775**2)),  # (0.8, .775, .775)
    ],
)
def test_waterfill_cost_hand_cases(total, lower, expected):
    got = _waterfill_cost(
        torch.tensor(total, dtype=torch.float64), torch.tensor(lower, dtype=torch.float64)
    )
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_waterfill_cost_batched_matches_convex_solver():
    rng = numpy_generator(0, "waterfill")
    totals = rng.uniform(0.5, 5.0, size=12)
    lowers = np.abs(rng.normal(size=(12, 4))) * rng.uniform(0, 2, size=(12, 1))
    got = _waterfill_cost(torch.tensor(totals), torch.tensor(lowers)).numpy()
    for t, lo, g in zip(totals, lowers, got, strict=True):
        res = minimize(
            lambda v: 0.5 * v @ v,
            x0=np.maximum(lo, t / len(lo)) + 0.1,
            jac=lambda v: v,
            constraints=[
                {
                    "type": "ineq",
                    "fun": lambda v, t=t: v.sum() - t,
                    "jac": lambda v: np.ones_like(v),
                }
            ],
            bounds=[(b, None) for b in lo],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        )
        assert res.success
        assert g == pytest.approx(np.linalg.norm(res.x), rel=1e-6)


# ---------------------------------------------------------------------------- analytic radius, hand


def test_analytic_radius_hand_cases():
    net = robust_reference_net(MEANS4, SIGN4, beta=0.5)
    x = torch.tensor(
        [
            [1.8, 0.2, -0.1, 0.3],  # A = 0.8, gaps 1.1, 0.7: switching off (0.8) is cheapest
            [3.0, 0.0, 0.9, 0.9],  # A = 2, gaps .1, .1: raise both (tau = 2.2/3) -> 2.2/sqrt(3)
            [0.2, 0.95, 0.0, 2.5],  # y=-1, A = 1.5, gaps .8, .05: raise one -> 1.55/sqrt(2)
            [0.5, 0.0, 1.6, 0.0],  # y=+1 but neuron 2 fires: misclassified -> 0
            [1.5, 1.5, 0.0, 0.0],  # two own neurons active: not generic -> NaN
        ]
    )
    y = torch.tensor([1.0, 1.0, -1.0, 1.0, 1.0])
    r = analytic_radius(net, x, y)
    torch.testing.assert_close(
        r[:4], torch.tensor([0.8, 2.2 / math.sqrt(3), 1.55 / math.sqrt(2), 0.0])
    )
    assert torch.isnan(r[4])

    # the optimal perturbations (just past the radius) flip the sign; shrunk they do not
    tau = 2.2 / 3
    d_switch = torch.tensor([-0.8, 0, 0, 0])
    d_fill2 = torch.tensor([-tau, 0, tau, tau])
    d_fill1 = torch.tensor([0, 0.775, 0, -0.775])
    for xi, yi, delta, ri in (
        (x[0], 1.0, d_switch, r[0]),
        (x[1], 1.0, d_fill2, r[1]),
        (x[2], -1.0, d_fill1, r[2]),
    ):
        assert delta.norm().item() == pytest.approx(ri.item(), rel=1e-5)
        yy = torch.tensor([yi])
        assert not binary_correct(net, (xi + 1.001 * delta)[None], yy).item()
        assert binary_correct(net, (xi + 0.99 * delta)[None], yy).item()


# ---------------------------------------------------------------------------- vs PGD on cluster data


@pytest.fixture(scope="module")
def reference_setup():
    cfg = ClusterDataConfig(d=200, k=10, n_train=1, n_test=150, sigma=1.0)
    data = make_cluster_data(cfg, 0)
    net = robust_reference_net(data.means, data.sign)
    te = data.test
    r = analytic_radius(net, te.x, te.y)
    return cfg, data, net, r


def test_analytic_radius_on_cluster_data_is_switch_off_cost(reference_setup):
    cfg, data, net, r = reference_setup
    te = data.test
    assert torch.isfinite(r).all() and (r > 0).all()
    u = data.means / data.means.norm(dim=1, keepdim=True)
    a_own = (te.x * u[te.fine]).sum(1)
    torch.testing.assert_close(r, a_own - 0.5 * math.sqrt(cfg.d), rtol=1e-5, atol=1e-5)
    # ~ sqrt(d)/2 +- sigma
    assert abs(r.mean().item() - math.sqrt(cfg.d) / 2) < 0.3


def test_pgd_matches_analytic_radius(reference_setup):
    cfg, data, net, r = reference_setup
    te = data.test
    q = torch.quantile(r, torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9]))
    eps = torch.cat([0.9 * r.min()[None], q, 1.1 * r.max()[None]])
    pcfg = PGDConfig(norm="l2", steps=100, restarts=3, step_size=0.1)
    adv = pgd(net, te.x, te.y, te.fine, eps, neg_binary_margin, pcfg, torch_generator(0, "ref_pgd"))
    with torch.no_grad():
        correct = torch.stack(
            [binary_correct(net, adv[i], te.y) for i in range(len(eps))]
        )  # (R, n)
    analytic_acc = (r[None, :] > eps[:, None]).float().mean(1)
    pgd_acc = correct.float().mean(1)
    assert pgd_acc[0] == 1.0 and pgd_acc[-1] == 0.0
    assert (pgd_acc - analytic_acc).abs().max() <= 0.02, (pgd_acc, analytic_acc)
    # per point: the radius is a certificate (nobody beyond it is fooled), and PGD reaches it
    for i, e in enumerate(eps):
        assert correct[i][r > 1.05 * e].all()
        assert not correct[i][r < 0.95 * e].any()
    # the attack is tight: fooled examples used a perturbation of norm >= their radius
    delta = (adv - te.x[None]).norm(dim=2)
    fooled = ~correct
    assert (delta[fooled] >= r[None, :].expand_as(delta)[fooled] * (1 - 1e-4)).all()


def test_minus_u_direction_at_radius(reference_setup):
    cfg, data, net, r = reference_setup
    te = data.test
    u = data.means / data.means.norm(dim=1, keepdim=True)
    direction = -u[te.fine]
    above = te.x + (r * 1.001 + 1e-4)[:, None] * direction
    below = te.x + (r * 0.999)[:, None] * direction
    assert not binary_correct(net, above, te.y).any()
    assert binary_correct(net, below, te.y).all()
