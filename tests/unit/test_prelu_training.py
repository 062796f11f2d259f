"""pReLU training: exp loss numerics, a hand-computed SGD step, the official autograd loop,
Adam, and batched sweeps == sequential runs."""

import math

import pytest
import torch
import torch.nn.functional as F

from ibrobust.models.prelu import PreluConfig, PreluNet, build_prelu, init_prelu, prelu_readout
from ibrobust.seeding import torch_generator
from ibrobust.training.exp_loss import exp_margin_loss, exp_margin_loss_grad, log_exp_margin_loss
from ibrobust.training.prelu import PreluTrainConfig, train_prelu, train_prelu_sweep

# ---------------------------------------------------------------- exponential loss


def test_exp_loss_equals_exp_where_representable():
    m = torch.tensor([-3.0, 0.0, 0.5, 20.0], dtype=torch.float64)
    torch.testing.assert_close(exp_margin_loss(m), torch.exp(-m).mean())
    val, grad = exp_margin_loss_grad(m)
    torch.testing.assert_close(val, torch.exp(-m).mean())
    torch.testing.assert_close(grad, -torch.exp(-m) / 4)


def test_exp_loss_huge_margins_no_inf_nan():
    big = torch.tensor([1e4, 1e6, 3e38], dtype=torch.float32)
    val, grad = exp_margin_loss_grad(big)
    assert float(val) == 0.0 and torch.isfinite(grad).all() and torch.equal(grad, torch.zeros(3))
    # one term overflows fp32 (exp(89) > 3.4e38) but the mean (2.2e38) does not
    m = torch.tensor([-89.0, 1e4], dtype=torch.float32)
    assert not torch.isfinite(torch.exp(-m).mean())
    val, grad = exp_margin_loss_grad(m)
    assert torch.isfinite(val) and torch.isfinite(grad).all()
    torch.testing.assert_close(
        val.double(), torch.tensor(math.exp(89.0) / 2, dtype=torch.float64), rtol=1e-5, atol=0
    )
    # the log-loss is finite for any finite margin
    lg = log_exp_margin_loss(torch.tensor([-1e6, 1e6], dtype=torch.float32))
    torch.testing.assert_close(lg, torch.tensor(1e6 - math.log(2)))


# ---------------------------------------------------------------- one SGD step by hand


def test_one_sgd_step_hand_computed_p2():
    # w = (3, 4), v = 0.1, x = (1, 1), y = +1, p = 2, lr = 0.1, batch = the one point:
    #   <x, w> = 7, ||w|| = 5, f = v <x,w>^2/||w|| = 0.1 * 49/5 = 0.98, L = e := exp(-0.98)
    #   dL/dv = -e * 49/5 = -9.8 e
    #   dL/dw = -e v (2 <x,w> x/||w|| - <x,w>^2 w/||w||^3)
    #         = -e * 0.1 * ((2.8, 2.8) - 49 (3, 4)/125) = -e * 0.1 * (1.624, 1.232)
    e = math.exp(-0.98)
    w0 = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    v0 = torch.tensor([[0.1]], dtype=torch.float64)
    net = PreluNet(w0, v0, torch.tensor([1.0]), 2)
    x = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    y = torch.tensor([1.0], dtype=torch.float64)
    cfg = PreluTrainConfig(lr=0.1, batch_size=1, epochs=1)
    res = train_prelu(net, x, y, cfg, seed=0)
    w1, v1 = res.model.weight.detach(), res.model.out_weight.detach()
    torch.testing.assert_close(v1 - v0, torch.tensor([[0.1 * 9.8 * e]], dtype=torch.float64))
    expect = 0.1 * e * 0.1 * torch.tensor([[1.624, 1.232]], dtype=torch.float64)
    torch.testing.assert_close(w1 - w0, expect, rtol=1e-10, atol=0)
    assert res.steps == 1 and res.history == [{"epoch": 1, "loss": pytest.approx(e), "acc": 1.0}]
    assert torch.equal(net.weight.detach(), w0)  # the input net is not modified


# ---------------------------------------------------------------- the official autograd loop


def official_loop(net: PreluNet, x, labels, cfg: PreluTrainConfig, seed: int):
    """The official code's loop, plain autograd + torch.optim (W stored as (h, D) here)."""
    w = net.weight.detach().clone().requires_grad_(True)
    v = net.out_weight.detach().clone().requires_grad_(True)
    b = None if net.out_bias is None else net.out_bias.detach().clone().requires_grad_(True)
    params = [w, v] + ([] if b is None else [b])
    if cfg.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=cfg.lr)
    else:
        opt = torch.optim.Adam(params, lr=cfg.lr, betas=cfg.betas, eps=cfg.adam_eps)
    p, g, n = net.p, torch_generator(seed, "prelu", "shuffle"), x.shape[0]
    for _ in range(cfg.epochs):
        perm = torch.randperm(n, generator=g)
        for lo in range(0, n, cfg.batch_size):
            idx = perm[lo : lo + cfg.batch_size]
            xb = x[idx] - net.center
            if p > 1:
                hid = torch.relu(xb @ w.T) ** p / w.norm(dim=1) ** (p - 1)
                if net.normalize_input:
                    hid = hid / xb.norm(dim=1, keepdim=True) ** (p - 1)
            else:
                hid = torch.relu(xb @ w.T)
            out = hid @ v.T + (0 if b is None else b)
            if cfg.loss == "exponential":
                loss = torch.exp(-(out @ net.readout) * labels[idx]).mean()
            else:
                loss = F.cross_entropy(out, labels[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w.detach(), v.detach(), None if b is None else b.detach()


def _problem(
    seed, n=23, d=6, k=4, std=0.3, heads=1, p=1, normalize=False, bias=False, center=False
):
    g = torch.Generator().manual_seed(seed)
    means = torch.eye(d, dtype=torch.float64)[:k]
    fine = torch.randint(k, (n,), generator=g)
    x = means[fine] + 0.2 * torch.randn(n, d, generator=g, dtype=torch.float64)
    sign = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    cfg = PreluConfig(width=5, p=p, init_std=std, normalize_input=normalize, out_bias=bias)
    prm = init_prelu(d, heads, cfg, seed=seed)
    prm.weight, prm.out_weight = prm.weight.double(), prm.out_weight.double()
    if prm.out_bias is not None:
        prm.out_bias = 0.1 * torch.randn(heads, generator=g, dtype=torch.float64)
    sup = "binary" if heads == 1 else "multiclass"
    readout = prelu_readout(sup, sign[:heads] if heads > 1 else None)
    c = x.mean(0) if center else None
    net = build_prelu(prm, readout, cfg, center=c)
    labels = sign[fine] if heads == 1 else fine % heads
    return net, x, labels


@pytest.mark.parametrize("p", [1, 2, 3, 4])
@pytest.mark.parametrize("std", [0.3, 1e-7])
def test_matches_official_sgd_loop(p, std):
    net, x, y = _problem(0, std=std, p=p)
    cfg = PreluTrainConfig(lr=0.2, batch_size=5, epochs=3)  # 23 = 4 * 5 + 3: short last batch
    res = train_prelu(net, x, y, cfg, seed=7)
    w, v, _ = official_loop(net, x, y, cfg, seed=7)
    torch.testing.assert_close(res.model.weight.detach(), w, rtol=1e-9, atol=1e-12 * std)
    torch.testing.assert_close(res.model.out_weight.detach(), v, rtol=1e-9, atol=1e-12 * std)
    assert res.steps == 3 * 5 and len(res.history) == 3


@pytest.mark.parametrize("p", [1, 3])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_matches_official_ce_loop_with_centring_normalisation_bias(p, optimizer):
    net, x, y = _problem(1, heads=4, p=p, normalize=True, bias=True, center=True)
    lr = 0.2 if optimizer == "sgd" else 1e-2
    cfg = PreluTrainConfig(lr=lr, batch_size=8, epochs=2, loss="cross_entropy", optimizer=optimizer)
    res = train_prelu(net, x, y, cfg, seed=3)
    w, v, b = official_loop(net, x, y, cfg, seed=3)
    torch.testing.assert_close(res.model.weight.detach(), w, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(res.model.out_weight.detach(), v, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(res.model.out_bias.detach(), b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("p", [1, 3])
def test_zero_neuron_stays_zero_and_finite(p):
    net, x, y = _problem(2, std=1e-7, p=p)
    with torch.no_grad():
        net.weight[2] = 0.0
    res = train_prelu(net, x, y, PreluTrainConfig(batch_size=6, epochs=2), seed=0)
    assert torch.isfinite(res.model.weight).all() and torch.isfinite(res.model.out_weight).all()
    assert torch.equal(res.model.weight[2].detach(), torch.zeros(6, dtype=torch.float64))


# ---------------------------------------------------------------- sweeps


@pytest.mark.parametrize(
    "kw, cfg",
    [
        ({"p": 1}, PreluTrainConfig(batch_size=7, epochs=3)),
        ({"p": 3, "std": 1e-7}, PreluTrainConfig(batch_size=7, epochs=3)),
        (
            {"p": 2, "heads": 4, "normalize": True, "bias": True},
            PreluTrainConfig(
                lr=1e-2,
                batch_size=7,
                epochs=3,
                loss="cross_entropy",
                optimizer="adam",
                eval_every=2,
            ),
        ),
    ],
)
def test_sweep_equals_sequential_runs(kw, cfg):
    probs = [_problem(s, **kw) for s in range(3)]  # different data and init per run
    seeds = [11, 12, 11]  # runs 0 and 2 share a shuffling seed, as alphas x seeds do
    seq = [
        train_prelu(net, x, y, cfg, seed=sd) for (net, x, y), sd in zip(probs, seeds, strict=True)
    ]
    logged = []
    swp = train_prelu_sweep(
        [pr[0] for pr in probs],
        torch.stack([pr[1] for pr in probs]),
        torch.stack([pr[2] for pr in probs]),
        cfg,
        seeds,
        on_epoch=logged.append,
    )
    for a, b in zip(seq, swp, strict=True):
        torch.testing.assert_close(b.model.weight, a.model.weight, rtol=1e-10, atol=1e-13)
        torch.testing.assert_close(b.model.out_weight, a.model.out_weight, rtol=1e-10, atol=1e-13)
        assert len(b.history) == len(a.history)
        for rb, ra in zip(b.history, a.history, strict=True):
            assert {k: v for k, v in rb.items() if k != "run"} == pytest.approx(ra, rel=1e-10)
    assert len(logged) == 3 * len(swp[0].history) and {r["run"] for r in logged} == {0, 1, 2}


def test_history_and_full_evaluation():
    net, x, y = _problem(4)
    recs = []
    cfg = PreluTrainConfig(batch_size=5, epochs=4, eval_every=3)
    res = train_prelu(net, x, y, cfg, seed=0, on_epoch=recs.append)
    assert recs == res.history and [r["epoch"] for r in recs] == [0, 1, 2, 3, 4]
    with torch.no_grad():
        f0 = net.binary_score(x)
        f4 = res.model.binary_score(x)
    assert recs[0]["full_loss"] == pytest.approx(float(torch.exp(-y * f0).mean()), rel=1e-12)
    assert recs[4]["full_loss"] == pytest.approx(float(torch.exp(-y * f4).mean()), rel=1e-12)
    assert recs[4]["full_acc"] == pytest.approx(float((y * f4 > 0).double().mean()))
    assert "full_loss" in recs[3] and "full_loss" not in recs[2]


def test_divergence_raises_and_bad_inputs():
    net, x, y = _problem(5, std=1.0)
    with pytest.raises(FloatingPointError, match="epoch"):
        train_prelu(net, x * 100, y, PreluTrainConfig(lr=1e6, batch_size=5, epochs=5), seed=0)
    with pytest.raises(ValueError, match="labels"):
        train_prelu(net, x, (y > 0).double(), PreluTrainConfig(), seed=0)
    with pytest.raises(ValueError, match="int64"):
        train_prelu(net, x, y, PreluTrainConfig(loss="cross_entropy"), seed=0)
    with pytest.raises(ValueError, match="lr"):
        PreluTrainConfig(lr=0.0)
    other, _, _ = _problem(6, p=3)
    with pytest.raises(ValueError, match="share p"):
        train_prelu_sweep(
            [net, other], torch.stack([x, x]), torch.stack([y, y]), PreluTrainConfig(), [0, 1]
        )


def test_sweep_on_shared_expanded_data_equals_sequential_runs():
    probs = [_problem(s, p=3) for s in range(3)]
    x, y = probs[0][1], probs[0][2]  # one dataset, three inits and shuffling seeds
    cfg = PreluTrainConfig(batch_size=6, epochs=2)
    swp = train_prelu_sweep(
        [pr[0] for pr in probs], x.expand(3, *x.shape), y.expand(3, *y.shape), cfg, [0, 1, 2]
    )
    for s, (net, _, _) in enumerate(probs):
        seq = train_prelu(net, x, y, cfg, seed=s)
        torch.testing.assert_close(swp[s].model.weight, seq.model.weight, rtol=1e-10, atol=1e-13)


# ---------------------------------------------------------------- bfloat16 products


def _float32(prob):
    net, x, y = prob
    net = PreluNet(
        net.weight.detach().float(),
        net.out_weight.detach().float(),
        net.readout.float(),
        net.p,
        out_bias=None if net.out_bias is None else net.out_bias.detach().float(),
        center=net.center.float(),
        normalize_input=net.normalize_input,
    )
    return net, x.float(), y.float() if y.is_floating_point() else y


@pytest.mark.parametrize(
    "kw, cfg",
    [
        ({"p": 1}, PreluTrainConfig(batch_size=5, epochs=3)),
        ({"p": 3, "std": 1e-7}, PreluTrainConfig(batch_size=5, epochs=3)),
        (
            {"p": 2, "heads": 4, "normalize": True, "bias": True},
            PreluTrainConfig(
                lr=1e-2, batch_size=8, epochs=3, loss="cross_entropy", optimizer="adam"
            ),
        ),
    ],
)
def test_bf16_products_track_fp32_training_at_bfloat16_precision(kw, cfg):
    """matmul='bf16' rounds the operands of x W^T and of the weight-gradient product to
    bfloat16 (8 significant bits): the iterates differ from fp32 training by about that
    relative amount - not zero (the products really are bfloat16), not more."""
    from dataclasses import replace

    net, x, y = _float32(_problem(3, **kw))
    full = train_prelu(net, x, y, cfg, seed=5).model
    low = train_prelu(net, x, y, replace(cfg, matmul="bf16"), seed=5).model
    assert low.weight.dtype == torch.float32  # the weights stay fp32
    for a, b in ((low.weight, full.weight), (low.out_weight, full.out_weight)):
        rel = float((a - b).detach().norm() / b.detach().norm())
        assert 1e-5 < rel < 3e-2, rel
    assert net.weight.dtype == torch.float32


def test_bf16_sweep_equals_sequential_bf16_runs_and_bad_inputs():
    probs = [_float32(_problem(s, p=3, std=1e-7)) for s in range(3)]
    cfg = PreluTrainConfig(batch_size=6, epochs=2, matmul="bf16")
    swp = train_prelu_sweep(
        [pr[0] for pr in probs],
        torch.stack([pr[1] for pr in probs]),
        torch.stack([pr[2] for pr in probs]),
        cfg,
        [0, 1, 2],
    )
    for s, (net, x, y) in enumerate(probs):
        seq = train_prelu(net, x, y, cfg, seed=s)
        torch.testing.assert_close(swp[s].model.weight, seq.model.weight, rtol=1e-5, atol=1e-12)
    with pytest.raises(ValueError, match="matmul"):
        PreluTrainConfig(matmul="fp16")
    net, x, y = _problem(0)  # float64 data
    with pytest.raises(ValueError, match="matmul='bf16' trains fp32 weights"):
        train_prelu(net, x, y, cfg, seed=0)


def test_bf16_one_sgd_step_rounds_both_big_products_by_hand():
    """One SGD step (p = 1, exponential loss, one batch) with matmul='bf16' equals the
    step written out by hand with both big products - x W^T and g^T x - taken from
    bfloat16 operands and rounded to bfloat16, everything else fp32; the fp32 step differs."""
    from dataclasses import replace

    bf = torch.bfloat16
    net, x, y = _float32(_problem(3, p=1))
    n = x.shape[0]
    cfg = PreluTrainConfig(lr=0.5, batch_size=n, epochs=1, matmul="bf16")
    perm = torch.randperm(n, generator=torch_generator(9, "prelu", "shuffle"))
    xb, yb = x[perm], y[perm]
    w, v = net.weight.detach(), net.out_weight.detach()
    u = torch.bmm(xb.to(bf)[None], w.to(bf).T[None])[0].float()  # (B, h), rounded
    a = torch.relu(u)
    m = yb * (a @ v.T)[:, 0]  # binary readout of one head: +1
    g = (-torch.exp(-m) / n * yb)[:, None]  # d mean exp(-m) / d logits, (B, 1)
    gz = (g @ v) * (a > 0)  # (B, h)
    gw = torch.bmm(gz.T.to(bf)[None], xb.to(bf)[None])[0].float()  # (h, D), rounded
    w_hand, v_hand = w - cfg.lr * gw, v - cfg.lr * (g.T @ a)

    low = train_prelu(net, x, y, cfg, seed=9).model
    torch.testing.assert_close(low.weight.detach(), w_hand, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(low.out_weight.detach(), v_hand, rtol=1e-5, atol=1e-7)
    full = train_prelu(net, x, y, replace(cfg, matmul="fp32"), seed=9).model
    assert float((full.weight.detach() - w_hand).abs().max()) > 1e-5
