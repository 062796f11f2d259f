"""Robust ERM as an option of the generic network trainer (ibrobust.training.adversarial) and
the homogeneous FC net of Study PRICE-NN (ibrobust.models.fc)."""

from __future__ import annotations

import pytest
import torch

from ibrobust.models.fc import FCConfig, FCNet, build, build_fc
from ibrobust.models.registry import BuildContext
from ibrobust.seeding import torch_generator
from ibrobust.training.adversarial import (
    AdversarialConfig,
    adversarial_from_dict,
    batch_perturbation,
    perturb_batch,
    pgd_config,
)
from ibrobust.training.network import NetTrainConfig, train_network

torch.set_num_threads(1)
F64 = torch.float64


def tiny_net() -> FCNet:
    """f(x) = a . ReLU(W x) with W (2, 3), a (2,), in float64."""
    net = FCNet(3, 2, torch.ones(1)).to(F64)
    with torch.no_grad():
        net.hidden.weight.copy_(torch.tensor([[1.0, -2.0, 0.5], [-1.0, 1.0, 2.0]], dtype=F64))
        net.out.weight.copy_(torch.tensor([[0.5, -1.5]], dtype=F64))
    return net


def tiny_data():
    x = torch.tensor([[0.2, 0.5, 0.9], [0.95, 0.1, 0.3]], dtype=F64)  # in [0, 1]
    y = torch.tensor([1.0, -1.0], dtype=F64)
    return x, y, (y < 0).long()


def hand_f(W, a, x):
    return torch.relu(x @ W.T) @ a  # (n,)


def hand_grad_x(W, a, x):
    """d f / d x per point: W^T (a * 1[W x > 0]) -> (n, 3)."""
    act = (x @ W.T > 0).to(F64)  # (n, m)
    return (act * a) @ W


def hand_pgd(W, a, x, y, eps, steps, alpha, box=(0.0, 1.0)):
    """l_inf PGD from a zero start on the margin -y f: sign steps, ball, then box."""
    delta = torch.zeros_like(x)
    for _ in range(steps):
        g = -y[:, None] * hand_grad_x(W, a, x + delta)  # ascent direction of -y f
        delta = (delta + alpha * torch.sign(g)).clamp(-eps, eps)
        delta = (x + delta).clamp(*box) - x
    return x + delta


def test_adversarial_training_step_equals_hand_pgd_then_gd_step():
    net = tiny_net()
    W0, a0 = net.hidden.weight.detach().clone(), net.out.weight.detach()[0].clone()
    x, y, fine = tiny_data()
    eps, steps, lr = 0.3, 3, 0.2
    adv = AdversarialConfig(eps=eps, steps=steps, random_start=False)  # step 2.5 eps / 3
    cfg = NetTrainConfig(algorithm="gd", lr=lr, max_epochs=1, loss="exponential", adversarial=adv)
    train_network(net, x, y, fine, "binary", cfg, seed=0, device="cpu")

    xa = hand_pgd(W0, a0, x, y, eps, steps, alpha=2.5 * eps / steps)
    assert not torch.equal(xa, x)  # the attack moved the points
    # L = mean exp(-y f(xa)); dL/da = mean(-y e ReLU(W xa)), dL/dW = mean(-y e (a*1[W xa>0]) xa^T)
    e = torch.exp(-y * hand_f(W0, a0, xa))  # (n,)
    c = -y * e / x.shape[0]  # (n,)
    h = torch.relu(xa @ W0.T)  # (n, m)
    grad_a = c @ h
    grad_W = (c[:, None] * (h > 0).to(F64) * a0).T @ xa  # (m, 3)
    torch.testing.assert_close(net.out.weight.detach()[0], a0 - lr * grad_a)
    torch.testing.assert_close(net.hidden.weight.detach(), W0 - lr * grad_W)


def test_sign_descent_step_on_a_network_is_lr_times_sign_of_grad_per_parameter():
    gen = torch_generator(0, "test", "fc")
    net = build_fc(FCConfig(width=5, init_scale=1.0), (4,), torch.ones(1), gen).to(F64)
    x = torch.rand(6, 4, generator=gen, dtype=F64)
    y = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0], dtype=F64)
    before = {k: p.detach().clone() for k, p in net.named_parameters()}
    loss = torch.exp(-y * net.binary_score(x)).mean()
    grads = dict(zip(before, torch.autograd.grad(loss, list(net.parameters())), strict=True))
    lr = 0.01
    cfg = NetTrainConfig(
        algorithm="gd", lr=lr, max_epochs=1, norm="linf", scale="unit", loss="exponential"
    )
    train_network(net, x, y, (y < 0).long(), "binary", cfg, seed=0, device="cpu")
    for k, p in net.named_parameters():
        assert (grads[k] != 0).any()
        torch.testing.assert_close(p.detach(), before[k] - lr * torch.sign(grads[k]))


def test_eps_zero_is_plain_erm_bit_for_bit():
    x, y, fine = tiny_data()
    runs = []
    for adv in (None, AdversarialConfig(eps=0.0)):
        net = tiny_net()
        cfg = NetTrainConfig(algorithm="gd", lr=0.1, max_epochs=3, adversarial=adv)
        train_network(net, x, y, fine, "binary", cfg, seed=0, device="cpu")
        runs.append([p.detach().clone() for p in net.parameters()])
    assert batch_perturbation(AdversarialConfig(eps=0.0), "binary", 0) is None
    for a, b in zip(*runs, strict=True):
        assert torch.equal(a, b)


def test_random_start_perturbation_stays_in_ball_and_box_and_lowers_the_margin():
    gen = torch_generator(1, "test", "fc")
    net = build_fc(FCConfig(width=16), (20,), torch.ones(1), gen).to(F64)
    x = torch.rand(32, 20, generator=gen, dtype=F64)
    y = torch.sign(net.binary_score(x)).detach()  # every point correct before the attack
    cfg = AdversarialConfig(eps=0.1)
    xa = perturb_batch(net, x, y, (y < 0).long(), cfg, "binary", torch_generator(0, "t"))
    assert (xa - x).abs().max() <= 0.1 + 1e-12
    assert xa.min() >= 0 and xa.max() <= 1
    assert net.training and all(p.requires_grad for p in net.parameters())  # restored
    margin0, margin1 = y * net.binary_score(x), y * net.binary_score(xa)
    assert (margin1 < margin0).all()


def test_robust_erm_is_deterministic_per_seed_and_differs_across_seeds():
    gen = torch_generator(2, "test", "fc")
    x = torch.rand(8, 5, generator=gen, dtype=F64)
    y = torch.tensor([1.0, -1.0] * 4, dtype=F64)
    out = []
    for seed in (0, 0, 1):
        net = build_fc(FCConfig(width=4), (5,), torch.ones(1), torch_generator(0, "w")).to(F64)
        cfg = NetTrainConfig(
            algorithm="gd", lr=0.1, max_epochs=2, adversarial=AdversarialConfig(eps=0.2)
        )
        train_network(net, x, y, (y < 0).long(), "binary", cfg, seed=seed, device="cpu")
        out.append(net.hidden.weight.detach().clone())
    assert torch.equal(out[0], out[1])
    assert not torch.equal(out[0], out[2])  # another seed: other random starts


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ({"eps": -0.1}, "eps must be finite and >= 0"),
        ({"eps": 1.5}, r"eps=1.5 is outside \[0, 1.0\]"),
        ({"eps": 0.1, "norm": "l3"}, "norm must be one of"),
        ({"eps": 0.1, "steps": 0}, "steps must be a positive integer"),
        ({"eps": 0.1, "step_size": 0.0}, "step_size must be > 0"),
        ({"eps": 0.1, "box": [1, 0]}, "box must be"),
        ({"eps": 0.1, "restarts": 2}, r"unknown adversarial key\(s\) \['restarts'\]"),
    ],
)
def test_bad_adversarial_settings_are_refused_naming_the_key(entry, match):
    with pytest.raises(ValueError, match=match):
        adversarial_from_dict(entry)


def test_l2_eps_above_one_is_allowed_and_defaults_follow_madry():
    assert adversarial_from_dict({"eps": 2.0, "norm": "l2"}).eps == 2.0
    pgd = pgd_config(adversarial_from_dict({"eps": 0.1}))
    assert (pgd.norm, pgd.steps, pgd.restarts, pgd.random_start) == ("linf", 10, 1, True)
    assert pgd.step_size == pytest.approx(0.25)  # 2.5 * eps / 10, relative to eps


def test_fc_net_is_homogeneous_without_biases_and_init_scales():
    ctx = BuildContext((1, 4, 4), torch.ones(1), seed=3)
    small = build({"kind": "fc", "width": 8, "init_scale": 0.1}, ctx)
    big = build({"kind": "fc", "width": 8, "init_scale": 1.0}, ctx)
    assert all("bias" not in k for k, _ in small.named_parameters())
    torch.testing.assert_close(small.hidden.weight, 0.1 * big.hidden.weight)
    x = torch.rand(5, 1, 4, 4, generator=torch_generator(0, "x"))
    # 2-homogeneous: scaling both layers by c scales f by c^2
    torch.testing.assert_close(small.binary_score(x), 0.01 * big.binary_score(x))
    with pytest.raises(ValueError, match="init_scale must be > 0"):
        build({"kind": "fc", "init_scale": 0.0}, ctx)
    with pytest.raises(ValueError, match="bad fc model settings"):
        build({"kind": "fc", "bias": True}, ctx)


@pytest.mark.parametrize("restarts", [1, 3])
def test_pgd_single_chunk_path_equals_the_chunked_path(restarts):
    from ibrobust.attacks.pgd import PGDConfig, pgd

    gen = torch_generator(4, "test", "fc")
    net = build_fc(FCConfig(width=6), (10,), torch.ones(1), gen).to(F64)
    x = torch.rand(7, 10, generator=gen, dtype=F64)
    y = torch.sign(net.binary_score(x)).detach()
    out = []
    for batch in (7, 3):  # one chunk (in place) vs three chunks (gather / scatter)
        cfg = PGDConfig(norm="linf", steps=4, restarts=restarts, step_size=0.3,
                        random_start=False, batch_size=batch)  # fmt: skip
        out.append(pgd(net, x, y, (y < 0).long(), [0.2], "margin", cfg, gen, box=(0.0, 1.0)))
    assert out[0].shape == (1, 7, 10)
    assert not torch.equal(out[0][0], x)
    torch.testing.assert_close(out[0], out[1], rtol=0, atol=0)
