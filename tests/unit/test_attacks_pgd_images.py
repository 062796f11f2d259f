"""PGD on image-shaped inputs (n, C, H, W) in the [0, 1] box, success judged by the task,
and l1 PGD (Duchi et al. projection, sparse steepest step)."""

from __future__ import annotations

import math

import pytest
import torch

from ibrobust.attacks.losses import get_attack_loss
from ibrobust.attacks.pgd import PGDConfig, _random_start, pgd, project_l1
from ibrobust.attacks.tasks import get_task
from ibrobust.seeding import torch_generator

torch.set_num_threads(1)

BOX = (0.0, 1.0)
RADII = {"l2": [0.25, 0.5, 1.0], "linf": [0.03, 0.06, 0.1], "l1": [1.0, 2.0, 4.0]}


def gen(*keys):
    return torch_generator(0, "test_attacks_pgd_images", *keys)


def lp(delta: torch.Tensor, norm: str) -> torch.Tensor:  # (n, *s) -> (n,)
    flat = delta.flatten(1)
    return {"l2": flat.norm(dim=1), "linf": flat.abs().amax(dim=1), "l1": flat.abs().sum(dim=1)}[
        norm
    ]


def accuracy(net, x, te, task):
    with torch.no_grad():
        return get_task(task).correct(net, x, te.y, te.fine).float().mean().item()


# ---------------------------------------------------------------------------- feasibility


@pytest.mark.parametrize("norm", ["l2", "linf", "l1"])
@pytest.mark.parametrize("task, loss", [("fine", "ce"), ("fine", "fine_margin")])
def test_pgd_images_stay_in_ball_and_box(toy_fine_net, toy_test, norm, task, loss):
    te, eps = toy_test, RADII[norm]
    adv = pgd(
        toy_fine_net, te.x, te.y, te.fine, eps, loss, PGDConfig(norm=norm, steps=15, restarts=2),
        gen("ball", norm, loss), BOX, task=task,
    )  # fmt: skip
    assert adv.shape == (len(eps), *te.x.shape)
    assert adv.min() >= 0.0 and adv.max() <= 1.0
    for r, e in enumerate(eps):
        assert (lp(adv[r] - te.x, norm) <= e * (1 + 1e-5)).all()
    assert ((adv == 0.0) | (adv == 1.0)).any()  # the box is active somewhere
    # l2 / linf use their budget (up to the box); l1 at least most of it
    assert (lp(adv[-1] - te.x, norm) >= 0.5 * eps[-1]).float().mean() > 0.9


@pytest.mark.parametrize("norm", ["l2", "linf", "l1"])
def test_pgd_images_chunking_does_not_change_result(toy_fine_net, toy_test, norm):
    te = toy_test
    cfg = dict(norm=norm, steps=5, restarts=2, random_start=False)
    args = (toy_fine_net, te.x[:9], te.y[:9], te.fine[:9], RADII[norm], "ce")
    a = pgd(*args, PGDConfig(batch_size=4096, **cfg), gen("c"), BOX, task="fine")
    b = pgd(*args, PGDConfig(batch_size=4, **cfg), gen("c"), BOX, task="fine")
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------- strength


@pytest.mark.parametrize("norm", ["l2", "linf", "l1"])
@pytest.mark.parametrize("loss", ["ce", "fine_margin", "margin"])
def test_pgd_images_loss_not_below_clean(toy_fine_net, toy_test, norm, loss):
    te, net, loss_fn = toy_test, toy_fine_net, get_attack_loss(loss)
    task = "binary" if loss == "margin" else "fine"
    adv = pgd(
        net, te.x, te.y, te.fine, RADII[norm][:2], loss, PGDConfig(norm=norm, steps=20, restarts=2),
        gen("climb", norm, loss), BOX, task=task,
    )  # fmt: skip
    with torch.no_grad():
        clean = loss_fn(net, te.x, te.y, te.fine)
        for r in range(adv.shape[0]):
            attacked = loss_fn(net, adv[r], te.y, te.fine)
            fooled = ~get_task(task).correct(net, adv[r], te.y, te.fine)
            # a restart that succeeds is kept even at a lower loss; otherwise the loss climbs
            assert (attacked[~fooled] >= clean[~fooled] - 1e-5).all()
            assert (attacked > clean + 1e-4).float().mean() > 0.9


def random_perturbation(x, eps, norm, g):
    """x + a random point on the sphere of radius eps (l2) / a random vertex (linf), boxed."""
    if norm == "linf":
        d = eps * (2.0 * (torch.rand(x.shape, generator=g) < 0.5) - 1)
    else:
        d = torch.randn(x.shape, generator=g)
        d = eps * d / d.flatten(1).norm(dim=1).reshape(-1, 1, 1, 1)
    return (x + d).clamp(*BOX)


@pytest.mark.parametrize("norm, eps", [("l2", 0.5), ("linf", 0.06)])
def test_pgd_beats_random_noise_of_the_same_norm(toy_binary_net, toy_test, norm, eps):
    te, net = toy_test, toy_binary_net
    clean = accuracy(net, te.x, te, "binary")
    adv = pgd(
        net, te.x, te.y, te.fine, [eps], "margin", PGDConfig(norm=norm, steps=20, restarts=2),
        gen("vs_random", norm), BOX,
    )[0]  # fmt: skip
    noise = min(
        accuracy(net, random_perturbation(te.x, eps, norm, gen("noise", norm, i)), te, "binary")
        for i in range(5)
    )
    robust = accuracy(net, adv, te, "binary")
    assert clean == 1.0
    assert noise >= 0.9  # the model shrugs off random noise of this size ...
    assert robust <= noise - 0.5  # ... but not the worst case within the same ball


def test_restarts_keep_the_worst_case_judged_by_the_fine_task(toy_fine_net, toy_test):
    """R restarts in one call == per-example best of R single-restart calls on the same
    random stream, where 'best' = fooled under the *fine* task first, then the higher loss."""
    te, net = toy_test, toy_fine_net
    loss_fn = get_attack_loss("ce")
    eps, R = [0.6, 0.9], 4
    cfg1 = PGDConfig(norm="l2", steps=3, restarts=1, step_size=0.3)
    g_seq = gen("restarts")
    singles = [
        pgd(net, te.x, te.y, te.fine, eps, "ce", cfg1, g_seq, BOX, task="fine") for _ in range(R)
    ]
    multi = pgd(
        net, te.x, te.y, te.fine, eps, "ce", PGDConfig(norm="l2", steps=3, restarts=R, step_size=0.3),
        gen("restarts"), BOX, task="fine",
    )  # fmt: skip
    n_changed = n_task_matters = 0
    with torch.no_grad():
        for r in range(len(eps)):
            cand = torch.stack([s[r] for s in singles])  # (R, n, 1, 8, 8)
            losses = torch.stack([loss_fn(net, c, te.y, te.fine) for c in cand])  # (R, n)
            fooled = torch.stack([~get_task("fine").correct(net, c, te.y, te.fine) for c in cand])
            bin_fooled = torch.stack(
                [~get_task("binary").correct(net, c, te.y, te.fine) for c in cand]
            )
            best = (losses.double() + 1e6 * fooled.double()).argmax(0)
            expected = cand[best, torch.arange(len(te.x))]
            torch.testing.assert_close(multi[r], expected, rtol=0, atol=1e-6)
            n_changed += int((best != 0).sum())
            best_bin = (losses.double() + 1e6 * bin_fooled.double()).argmax(0)
            n_task_matters += int((best_bin != best).sum())
    assert n_changed > 0  # restarts mattered
    assert n_task_matters > 0  # judging by the binary readout would have picked differently


# ---------------------------------------------------------------------------- l1


def test_project_l1_hand_case():
    v = torch.tensor([[3.0, 1.0, -2.0], [0.5, -0.5, 0.0], [1.0, -1.0, 1.0]])
    eps = torch.tensor([[2.0], [2.0], [0.0]])
    # row 0: rho = 2, theta = (3 + 2 - 2) / 2 = 1.5; row 1 inside the ball; row 2 radius 0
    expected = torch.tensor([[1.5, 0.0, -0.5], [0.5, -0.5, 0.0], [0.0, 0.0, 0.0]])
    torch.testing.assert_close(project_l1(v, eps), expected)


def test_project_l1_is_the_euclidean_projection():
    g = gen("proj")
    v = 3 * torch.randn(200, 12, generator=g, dtype=torch.float64)
    eps = 4 * torch.rand(200, 1, generator=g, dtype=torch.float64)
    w = project_l1(v, eps)
    outside = v.abs().sum(1) > eps[:, 0]
    assert outside.sum() > 100
    torch.testing.assert_close(w.abs().sum(1)[outside], eps[outside, 0])
    torch.testing.assert_close(w[~outside], v[~outside])
    # KKT: w = soft-threshold(v, theta) for one theta >= 0 per row
    theta = (v.abs() - w.abs())[w != 0].reshape(-1)
    for i in torch.nonzero(outside).flatten()[:20]:
        nz = w[i] != 0
        th = (v[i].abs() - w[i].abs())[nz]
        torch.testing.assert_close(th, th[0].expand_as(th))
        assert (v[i].abs()[~nz] <= th[0] + 1e-12).all()
        assert (torch.sign(w[i][nz]) == torch.sign(v[i][nz])).all()
    assert theta.numel() > 0
    # and no feasible point is closer: random points of the ball, and w's neighbours
    for i in torch.nonzero(outside).flatten()[:10]:
        z = _random_start((2000, 12), eps[i].expand(2000, 1), "l1", gen("z", int(i)))
        assert ((z - v[i]).norm(dim=1) >= (w[i] - v[i]).norm() - 1e-9).all()


def test_l1_random_start_is_uniform_in_the_ball():
    d, n = 5, 20000
    z = _random_start((n, d), torch.full((n, 1), 2.0), "l1", gen("start"))
    r = z.abs().sum(1) / 2.0
    assert (r <= 1 + 1e-6).all()
    # uniform in the d-dim l1 ball: P(||z||_1 <= t eps) = t^d, so E[r] = d / (d + 1)
    assert abs(r.mean().item() - d / (d + 1)) < 0.01
    assert abs((r <= 0.8).float().mean().item() - 0.8**d) < 0.015
    assert abs((z > 0).float().mean().item() - 0.5) < 0.01


@pytest.mark.parametrize("random_start", [False, True])
def test_pgd_l1_linear_model_closed_form(random_start):
    """On a linear score the l1 worst case is a vertex: -y eps sign(w_i) e_i, i = argmax |w_i|."""
    from ibrobust.models.two_layer import TwoLayerFixed

    g = gen("lin")
    d, m = 6, 3
    w = torch.randn(2, m, d, generator=g)
    net = TwoLayerFixed(w, torch.full((2, m), 100.0), torch.tensor([1.0, -1.0]))  # always active
    w_eff = w[0].mean(0) - w[1].mean(0)
    x = torch.randn(12, d, generator=g)
    y = torch.where(torch.rand(12, generator=g) < 0.5, -1.0, 1.0)
    fine = torch.zeros(12, dtype=torch.long)
    eps = [0.1, 0.7, 2.0]
    cfg = PGDConfig(norm="l1", steps=60, restarts=2, random_start=random_start)
    assert math.ceil(cfg.l1_top * d) == 1  # one coordinate per step: the exact steepest step
    adv = pgd(net, x, y, fine, eps, "margin", cfg, gen("lin", random_start))
    i = w_eff.abs().argmax()
    with torch.no_grad():
        clean = y * net.binary_score(x)
        for r, e in enumerate(eps):
            worst = clean - e * w_eff.abs().max()
            torch.testing.assert_close(
                y * net.binary_score(adv[r]), worst, rtol=0, atol=1e-4 * (1 + e)
            )
            expected = torch.zeros(12, d)
            expected[:, i] = -y * e * w_eff[i].sign()
            torch.testing.assert_close(adv[r] - x, expected, rtol=0, atol=1e-4 * (1 + e))


def test_l1_top_fraction_moves_more_coordinates_per_step(toy_fine_net, toy_test):
    te = toy_test
    one = pgd(
        toy_fine_net, te.x, te.y, te.fine, [2.0], "ce",
        PGDConfig(norm="l1", steps=3, restarts=1, random_start=False, l1_top=1 / 64),
        gen("top"), BOX, task="fine",
    )[0]  # fmt: skip
    many = pgd(
        toy_fine_net, te.x, te.y, te.fine, [2.0], "ce",
        PGDConfig(norm="l1", steps=3, restarts=1, random_start=False, l1_top=0.25),
        gen("top"), BOX, task="fine",
    )[0]  # fmt: skip
    nnz_one = ((one - te.x).flatten(1) != 0).sum(1)
    nnz_many = ((many - te.x).flatten(1) != 0).sum(1)
    assert (nnz_one <= 3).all()  # three steps of one coordinate each
    assert (nnz_many > 3).all()
