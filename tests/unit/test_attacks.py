"""PGD (ibrobust.attacks.pgd), attack losses and the universal direction."""

from __future__ import annotations

import pytest
import torch

from ibrobust.attacks.losses import (
    binary_correct,
    fine_cross_entropy,
    get_attack_loss,
    neg_binary_margin,
)
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.attacks.universal import universal_direction, universal_perturbation
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.readout import readout_for
from ibrobust.models.two_layer import TwoLayerConfig, TwoLayerFixed, init_two_layer
from ibrobust.seeding import torch_generator
from ibrobust.training.full_batch import GDConfig, train_gd

torch.set_num_threads(1)

NORMS = ("l2", "linf")


def gen(*keys):
    return torch_generator(0, "test_attacks", *keys)


def random_net(d=8, heads=2, m=6, seed=0, bias_scale=0.5):
    g = torch_generator(seed, "test_attacks", "net")
    w = torch.randn(heads, m, d, generator=g)
    b = bias_scale * torch.randn(heads, m, generator=g)
    readout = (
        torch.tensor([1.0, -1.0])
        if heads == 2
        else torch.where(torch.arange(heads) % 2 == 0, 1.0, -1.0)
    )
    return TwoLayerFixed(w, b, readout)


def random_points(n, d, seed=0, scale=1.0):
    g = torch_generator(seed, "test_attacks", "points")
    x = scale * torch.randn(n, d, generator=g)
    y = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0)
    fine = torch.zeros(n, dtype=torch.long)
    return x, y, fine


def linear_net(d=6, m=3, seed=0, offset=100.0):
    """A TwoLayerFixed whose ReLUs are always active on |x| << offset: F(x) = <w_eff, x>."""
    g = torch_generator(seed, "test_attacks", "linear")
    w = torch.randn(2, m, d, generator=g)
    b = torch.full((2, m), offset)  # same offset in both heads: cancels in F
    net = TwoLayerFixed(w, b, torch.tensor([1.0, -1.0]))
    w_eff = w[0].mean(0) - w[1].mean(0)
    return net, w_eff


@pytest.fixture(scope="module")
def trained_binary():
    cfg = ClusterDataConfig(d=30, k=4, n_train=40, n_test=40, sigma=1.0)
    data = make_cluster_data(cfg, 0)
    w0, b0 = init_two_layer(cfg.d, 2, TwoLayerConfig(m=4), 0)
    readout = readout_for("binary", data.sign)
    tr = data.train
    res = train_gd(
        tr.x,
        tr.y,
        tr.fine,
        w0,
        b0,
        readout,
        "binary",
        GDConfig(lr=0.5, max_steps=100, stop_loss=0.0),
    )
    return TwoLayerFixed(res.weight, res.bias, readout), data


@pytest.fixture(scope="module")
def trained_multiclass():
    cfg = ClusterDataConfig(d=30, k=4, n_train=40, n_test=40, sigma=1.0)
    data = make_cluster_data(cfg, 1)
    w0, b0 = init_two_layer(cfg.d, 4, TwoLayerConfig(m=4), 1)
    readout = readout_for("multiclass", data.sign)
    tr = data.train
    res = train_gd(
        tr.x,
        tr.y,
        tr.fine,
        w0,
        b0,
        readout,
        "multiclass",
        GDConfig(lr=0.5, max_steps=100, stop_loss=0.0),
    )
    return TwoLayerFixed(res.weight, res.bias, readout), data


# ---------------------------------------------------------------------------- losses


def test_attack_losses_hand_case():
    net = TwoLayerFixed(
        torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]]), torch.zeros(2, 1), torch.tensor([1.0, -1.0])
    )
    x = torch.tensor([[2.0, 1.0], [1.0, 3.0], [1.0, 1.0]])
    y = torch.tensor([1.0, 1.0, -1.0])
    fine = torch.tensor([0, 1, 0])
    # F = x0 - x1 = (1, -2, 0)
    assert neg_binary_margin(net, x, y, fine).tolist() == [-1.0, 2.0, 0.0]
    assert binary_correct(net, x, y).tolist() == [True, False, False]  # tie is an error
    ce = fine_cross_entropy(net, x, y, fine)
    expected = torch.nn.functional.cross_entropy(
        torch.tensor([[2.0, 1.0], [1.0, 3.0], [1.0, 1.0]]), fine, reduction="none"
    )
    torch.testing.assert_close(ce, expected)
    assert get_attack_loss("margin") is neg_binary_margin
    assert get_attack_loss("ce") is fine_cross_entropy
    with pytest.raises(ValueError, match="unknown attack loss"):
        get_attack_loss("cw")


def test_pgd_config_validation():
    for kw in (dict(norm="l0"), dict(steps=0), dict(restarts=0), dict(step_size=0.0)):
        with pytest.raises(ValueError):
            PGDConfig(**kw)


def test_negative_radius_raises():
    net = random_net()
    x, y, fine = random_points(3, 8)
    with pytest.raises(ValueError, match="radii"):
        pgd(
            net,
            x,
            y,
            fine,
            [0.1, -0.1],
            neg_binary_margin,
            PGDConfig(steps=2, restarts=1),
            gen("neg"),
        )


# ---------------------------------------------------------------------------- feasibility


@pytest.mark.parametrize("norm", NORMS)
def test_pgd_stays_in_ball(norm):
    net = random_net()
    x, y, fine = random_points(20, 8)
    eps = [0.05, 0.3, 1.0, 4.0]
    adv = pgd(
        net,
        x,
        y,
        fine,
        eps,
        neg_binary_margin,
        PGDConfig(norm=norm, steps=15, restarts=2),
        gen(norm),
    )
    assert adv.shape == (4, 20, 8)
    delta = adv - x[None]
    for r, e in enumerate(eps):
        size = delta[r].norm(dim=1) if norm == "l2" else delta[r].abs().amax(dim=1)
        assert (size <= e * (1 + 1e-5)).all()
        # the attack uses its budget (the margin is piecewise linear: optimum on the boundary)
        assert (size >= 0.5 * e).all()


@pytest.mark.parametrize("norm", NORMS)
def test_pgd_stays_in_box(norm):
    net = random_net()
    g = gen("box")
    x = torch.rand(25, 8, generator=g)
    y = torch.where(torch.rand(25, generator=g) < 0.5, -1.0, 1.0)
    fine = torch.zeros(25, dtype=torch.long)
    eps = [0.2, 0.6]
    adv = pgd(
        net,
        x,
        y,
        fine,
        eps,
        neg_binary_margin,
        PGDConfig(norm=norm, steps=15, restarts=2),
        gen(norm),
        box=(0.0, 1.0),
    )
    assert adv.min() >= 0.0 and adv.max() <= 1.0
    delta = adv - x[None]
    for r, e in enumerate(eps):
        size = delta[r].norm(dim=1) if norm == "l2" else delta[r].abs().amax(dim=1)
        assert (size <= e * (1 + 1e-5)).all()
    # the box is active: some coordinates sit on it
    assert ((adv == 0.0) | (adv == 1.0)).any()


@pytest.mark.parametrize("norm", NORMS)
def test_pgd_eps_zero_returns_x(norm):
    net = random_net()
    x, y, fine = random_points(10, 8)
    adv = pgd(
        net, x, y, fine, [0.0, 0.5], neg_binary_margin, PGDConfig(norm=norm, steps=5), gen("zero")
    )
    assert torch.equal(adv[0], x)
    assert not torch.equal(adv[1], x)


def test_pgd_restores_training_mode():
    net = random_net()
    x, y, fine = random_points(4, 8)
    net.train()
    pgd(net, x, y, fine, [0.1], neg_binary_margin, PGDConfig(steps=2, restarts=1), gen("mode"))
    assert net.training
    net.eval()
    pgd(net, x, y, fine, [0.1], neg_binary_margin, PGDConfig(steps=2, restarts=1), gen("mode"))
    assert not net.training


@pytest.mark.parametrize("norm", NORMS)
def test_pgd_chunking_does_not_change_result(norm):
    net = random_net()
    x, y, fine = random_points(9, 8)
    cfg = dict(norm=norm, steps=10, restarts=2, random_start=False)
    eps = [0.1, 0.5, 2.0]
    a = pgd(net, x, y, fine, eps, neg_binary_margin, PGDConfig(batch_size=4096, **cfg), gen("c"))
    b = pgd(net, x, y, fine, eps, neg_binary_margin, PGDConfig(batch_size=5, **cfg), gen("c"))
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------- strength


@pytest.mark.parametrize("norm", NORMS)
def test_pgd_loss_not_below_clean_trained_binary(trained_binary, norm):
    net, data = trained_binary
    te = data.test
    eps = [0.5, 2.0] if norm == "l2" else [0.02, 0.1]
    adv = pgd(
        net,
        te.x,
        te.y,
        te.fine,
        eps,
        neg_binary_margin,
        PGDConfig(norm=norm, steps=20, restarts=2),
        gen("clean", norm),
    )
    with torch.no_grad():
        clean = neg_binary_margin(net, te.x, te.y, te.fine)
        for r in range(len(eps)):
            attacked = neg_binary_margin(net, adv[r], te.y, te.fine)
            assert (attacked >= clean - 1e-5).all()
            assert (attacked > clean + 1e-3).float().mean() > 0.9  # it actually climbs
        # a bigger ball never gives a better model outcome on average
        l0 = neg_binary_margin(net, adv[0], te.y, te.fine)
        l1 = neg_binary_margin(net, adv[1], te.y, te.fine)
        assert l1.mean() > l0.mean()


def test_pgd_ce_loss_not_below_clean_trained_multiclass(trained_multiclass):
    net, data = trained_multiclass
    te = data.test
    adv = pgd(
        net,
        te.x,
        te.y,
        te.fine,
        [1.0],
        fine_cross_entropy,
        PGDConfig(steps=20, restarts=2),
        gen("ce"),
    )
    with torch.no_grad():
        clean = fine_cross_entropy(net, te.x, te.y, te.fine)
        attacked = fine_cross_entropy(net, adv[0], te.y, te.fine)
        fooled = ~binary_correct(net, adv[0], te.y)
    # a restart that flips the binary decision is kept even at a lower CE; otherwise CE climbs
    assert (attacked[~fooled] >= clean[~fooled] - 1e-5).all()
    assert (~fooled).sum() > 0


@pytest.mark.parametrize("random_start", [False, True])
def test_pgd_l2_linear_model_closed_form(random_start):
    net, w_eff = linear_net()
    x, y, fine = random_points(12, 6, seed=3)
    eps = [0.1, 0.7, 2.0]
    cfg = PGDConfig(norm="l2", steps=100, restarts=2, random_start=random_start)
    adv = pgd(net, x, y, fine, eps, neg_binary_margin, cfg, gen("lin", random_start))
    with torch.no_grad():
        clean = y * net.binary_score(x)
        torch.testing.assert_close(clean, y * (x @ w_eff), rtol=0, atol=1e-4)  # it is linear
        for r, e in enumerate(eps):
            worst = clean - e * w_eff.norm()
            got = y * net.binary_score(adv[r])
            torch.testing.assert_close(
                got, worst, rtol=0, atol=2e-3 * e * w_eff.norm().item() + 1e-4
            )
            # and the perturbation is the closed-form one, -y eps w_eff / ||w_eff||
            expected = -y[:, None] * e * w_eff / w_eff.norm()
            torch.testing.assert_close(adv[r] - x, expected, rtol=0, atol=0.1 * e)


def test_pgd_linf_linear_model_closed_form():
    net, w_eff = linear_net()
    x, y, fine = random_points(12, 6, seed=4)
    eps = [0.05, 0.3]
    adv = pgd(
        net,
        x,
        y,
        fine,
        eps,
        neg_binary_margin,
        PGDConfig(norm="linf", steps=40, restarts=2),
        gen("linf"),
    )
    with torch.no_grad():
        clean = y * net.binary_score(x)
        for r, e in enumerate(eps):
            worst = clean - e * w_eff.abs().sum()
            torch.testing.assert_close(y * net.binary_score(adv[r]), worst, rtol=0, atol=1e-4)
            torch.testing.assert_close(
                adv[r] - x, -y[:, None] * e * w_eff.sign(), rtol=0, atol=1e-6
            )


# ---------------------------------------------------------------------------- restarts


def _outcome(net, loss_fn, adv, x, y, fine):
    with torch.no_grad():
        return loss_fn(net, adv, y, fine), ~binary_correct(net, adv, y)


@pytest.mark.parametrize("loss_name", ["margin", "ce"])
def test_restarts_keep_per_example_worst_case(loss_name):
    """R restarts in one call == the per-example best of R single-restart calls that
    consume the same random stream: fooled beats not fooled, then the higher loss."""
    net = random_net(d=8, heads=4, m=5, seed=2, bias_scale=1.0)
    g = gen("pts")
    x = torch.randn(30, 8, generator=g)
    fine = torch.randint(4, (30,), generator=g)
    y = net.readout[fine]
    loss_fn = get_attack_loss(loss_name)
    eps = [0.3, 1.0]
    cfg1 = PGDConfig(norm="l2", steps=3, restarts=1, step_size=0.5)
    R = 4
    g_seq = torch_generator(11, "restarts")
    singles = [pgd(net, x, y, fine, eps, loss_fn, cfg1, g_seq) for _ in range(R)]
    multi = pgd(
        net,
        x,
        y,
        fine,
        eps,
        loss_fn,
        PGDConfig(norm="l2", steps=3, restarts=R, step_size=0.5),
        torch_generator(11, "restarts"),
    )
    n_changed = 0
    for r in range(len(eps)):
        outs = [_outcome(net, loss_fn, s[r], x, y, fine) for s in singles]
        losses = torch.stack([o[0] for o in outs])  # (R, n)
        fooled = torch.stack([o[1] for o in outs])  # (R, n)
        key = losses.double() + 1e6 * fooled.double()
        best = key.argmax(0)  # fooled first, then the highest loss
        expected = torch.stack([s[r] for s in singles])[best, torch.arange(len(x))]
        torch.testing.assert_close(multi[r], expected, rtol=0, atol=1e-6)
        # never worse than the first restart alone
        l_multi, f_multi = _outcome(net, loss_fn, multi[r], x, y, fine)
        assert (f_multi >= fooled[0]).all()
        same = f_multi == fooled[0]
        assert (l_multi[same] >= losses[0][same] - 1e-6).all()
        n_changed += int((best != 0).sum())
    assert n_changed > 0  # restarts mattered somewhere, so the test can tell


@pytest.mark.parametrize("norm", NORMS)
def test_outcome_only_skips_decided_points_same_outcome_same_stream(norm):
    """outcome_only: points fooled by an early restart skip the later ones. Which points are
    fooled is exactly that of all restarts; the generator ends in the same state (every
    restart still draws its starts for the whole batch); a not-fooled point keeps the very
    same example; a fooled point keeps its first fooling example."""
    net = random_net(d=8, heads=4, m=5, seed=2, bias_scale=1.0)
    g = gen("pts")
    x = torch.randn(40, 8, generator=g)
    fine = torch.randint(4, (40,), generator=g)
    y = net.readout[fine]
    eps = {"l2": [0.3, 1.0], "linf": [0.1, 0.4], "l1": [0.5, 2.0]}[norm]
    cfg = PGDConfig(norm=norm, steps=3, restarts=4, step_size=0.5)
    g_all, g_skip = torch_generator(5, "skip"), torch_generator(5, "skip")
    full = pgd(net, x, y, fine, eps, "margin", cfg, g_all)
    skip = pgd(net, x, y, fine, eps, "margin", cfg, g_skip, outcome_only=True)
    assert torch.equal(g_all.get_state(), g_skip.get_state())
    n_fooled = []
    for r in range(len(eps)):
        fooled_full = ~binary_correct(net, full[r], y)
        fooled_skip = ~binary_correct(net, skip[r], y)
        assert torch.equal(fooled_full, fooled_skip)
        torch.testing.assert_close(skip[r][~fooled_skip], full[r][~fooled_full], rtol=0, atol=0)
        n_fooled.append(int(fooled_skip.sum()))
    assert any(0 < k < len(x) for k in n_fooled)  # some fooled (skipped), some attacked on


# ---------------------------------------------------------------------------- universal


def test_universal_direction_hand_case():
    means = 2.0 * torch.eye(4)
    sign = torch.tensor([1.0, 1.0, -1.0, -1.0])
    z = universal_direction(means, sign)
    torch.testing.assert_close(z, torch.tensor([0.5, 0.5, -0.5, -0.5]))
    x = torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    y = torch.tensor([1.0, -1.0])
    adv = universal_perturbation(x, y, means, sign, [0.0, 1.0, 3.0])
    assert adv.shape == (3, 2, 4)
    assert torch.equal(adv[0], x)
    torch.testing.assert_close(adv[1], torch.tensor([[1.5, -0.5, 0.5, 0.5], [0.5, 0.5, -0.5, 1.5]]))
    torch.testing.assert_close(
        adv[2], x + 3.0 * torch.tensor([[-0.5, -0.5, 0.5, 0.5], [0.5, 0.5, -0.5, -0.5]])
    )


def test_universal_perturbation_norm_and_direction():
    cfg = ClusterDataConfig(d=50, k=6, n_train=20, n_test=5, positive=(0, 3, 5))
    data = make_cluster_data(cfg, 4)
    x, y = data.train.x, data.train.y
    eps = torch.tensor([0.5, 2.0, 7.0])
    adv = universal_perturbation(x, y, data.means, data.sign, eps)
    v = (
        data.means[0]
        + data.means[3]
        + data.means[5]
        - data.means[1]
        - data.means[2]
        - data.means[4]
    )
    for r, e in enumerate(eps):
        delta = adv[r] - x
        torch.testing.assert_close(
            delta.norm(dim=1), torch.full((len(x),), float(e)), rtol=1e-5, atol=1e-5
        )
        cos = (delta @ v) / (delta.norm(dim=1) * v.norm())
        torch.testing.assert_close(cos, -y, rtol=0, atol=1e-5)
