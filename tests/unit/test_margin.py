"""Study MARGIN's library: homogeneous CNN, log-space loss and margins, loss-based schedule,
training far below float64, certified radii and minimal-norm attacks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ibrobust.analysis.lipschitz import (
    certified_radius,
    circular_conv_norm,
    cnn_lipschitz,
    conv_norm_bound,
)
from ibrobust.analysis.margin import (
    homogeneity_error,
    log_ce,
    log_expm1_exp,
    log_softplus,
    margins,
    require_homogeneous,
    stats_from_logits,
)
from ibrobust.attacks.minimal_norm import (
    BisectionConfig,
    FABConfig,
    fab_distances,
    pgd_bisection,
    robust_accuracy_curve,
)
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.homogeneous_cnn import (
    HomogeneousCNNConfig,
    build_homogeneous_cnn,
)
from ibrobust.models.two_layer import TwoLayerConfig, TwoLayerFixed, init_two_layer
from ibrobust.seeding import torch_generator
from ibrobust.studies.margin.experiment import build_net, run_data
from ibrobust.training.margin import MarginTrainConfig, config_from_dict, train_margin
from ibrobust.updates.loss_based import GROW, SHRINK, LossBasedLR, LossBasedLRConfig

torch.set_num_threads(1)

TINY = HomogeneousCNNConfig(channels=(3, 4), kernels=(3, 3), hidden=8)


# ---------------------------------------------------------------- homogeneous CNN


@pytest.mark.parametrize("cfg", [HomogeneousCNNConfig(), TINY])
def test_cnn_is_4_homogeneous_in_float64(cfg):
    g = torch.Generator().manual_seed(1)
    shape = (1, 28, 28) if cfg == HomogeneousCNNConfig() else (1, 8, 8)
    net = build_homogeneous_cnn(shape, 10, cfg, seed=0)
    assert net.conv1.bias is not None and net.conv2.bias is None and net.fc1.bias is None
    x = torch.rand(3, *shape, generator=g, dtype=torch.float64)
    for c in (0.37, 2.9):
        assert homogeneity_error(net, x, 4, c) < 1e-12
    # the wrong degree is detected: the test can fail
    assert homogeneity_error(net, x, 3, 2.9) > 0.5


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cnn_pools_before_its_relu_and_is_the_papers_net_bit_for_bit(dtype):
    """relu(pool(conv)) is pool(relu(conv)) exactly, gradients included."""
    net = build_homogeneous_cnn((1, 8, 8), 10, TINY, seed=0, dtype=dtype)
    x = torch.rand(4, 1, 8, 8, generator=torch.Generator().manual_seed(2), dtype=dtype) - 0.5

    def papers_order(v):
        z = nn.functional.max_pool2d(torch.relu(net.conv1(v)), 2)
        z = nn.functional.max_pool2d(torch.relu(net.conv2(z)), 2)
        return net.fc2(torch.relu(net.fc1(z.flatten(1))))

    def value_and_grads(forward):
        xg = x.clone().requires_grad_(True)
        z = forward(xg)
        return [z, *torch.autograd.grad(z.logsumexp(1).sum(), [xg, *net.parameters()])]

    for a, b in zip(value_and_grads(net), value_and_grads(papers_order), strict=True):
        assert torch.equal(a, b)
    assert 0.2 < float((net.conv1(x) < 0).double().mean()) < 0.8  # ReLU zeros are hit


def test_channels_last_cnn_is_the_same_net_in_nhwc_and_float64_nets_stay_nchw():
    nhwc_cfg = HomogeneousCNNConfig(channels=(3, 4), kernels=(3, 3), hidden=8, channels_last=True)
    plain = build_homogeneous_cnn((1, 8, 8), 10, TINY, seed=0, dtype=torch.float32)
    nhwc = build_homogeneous_cnn((1, 8, 8), 10, nhwc_cfg, seed=0, dtype=torch.float32)
    assert nhwc.conv2.weight.is_contiguous(memory_format=torch.channels_last)
    assert not plain.conv2.weight.is_contiguous(memory_format=torch.channels_last)
    for a, b in zip(plain.parameters(), nhwc.parameters(), strict=True):
        assert torch.equal(a, b)
    x = torch.rand(6, 1, 8, 8, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(nhwc(x), plain(x), rtol=1e-5, atol=1e-6)
    # the study's builder keeps float64 nets (the robustness job's, float64 training) NCHW
    data = run_data(
        {"train_x": np.zeros((2, 1, 8, 8), np.uint8), "train_fine": np.array([0, 1]),
         "test_x": np.zeros((2, 1, 8, 8), np.uint8), "test_fine": np.array([0, 1]),
         "sign": np.array([1.0, -1.0])},
        "multiclass",
    )  # fmt: skip
    spec = {"kind": "homogeneous_cnn", "channels": [3, 4], "kernels": [3, 3], "hidden": [8],
            "channels_last": True}  # fmt: skip
    f32 = build_net(spec, data, "multiclass", 0, dtype=torch.float32)
    f64 = build_net(spec, data, "multiclass", 0, dtype=torch.float64)
    assert f32.channels_last and f32.conv2.weight.is_contiguous(memory_format=torch.channels_last)
    assert not f64.channels_last
    assert not f64.conv2.weight.is_contiguous(memory_format=torch.channels_last)


def test_a_bias_after_the_first_layer_breaks_homogeneity():
    net = build_homogeneous_cnn((1, 8, 8), 10, TINY, seed=0)
    net.fc1 = nn.Linear(net.fc1.in_features, 8, bias=True).double()
    x = torch.rand(3, 1, 8, 8, dtype=torch.float64)
    assert homogeneity_error(net, x, 4, 2.9) > 1e-3


def test_non_homogeneous_model_is_refused_naming_the_key():
    with pytest.raises(ValueError, match="model"):
        require_homogeneous(nn.Linear(3, 2), "model")
    with pytest.raises(ValueError, match="model"):
        train_margin(
            nn.Linear(3, 2),
            torch.zeros(4, 3),
            torch.zeros(4, dtype=torch.long),
            MarginTrainConfig(epochs=1),
            seed=0,
        )


# ---------------------------------------------------------------- log-space loss and margins


def test_log_ce_matches_cross_entropy_where_it_is_representable():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(50, 10, generator=g, dtype=torch.float64) * 8
    y = torch.randint(0, 10, (50,), generator=g)
    ce = F.cross_entropy(logits, y, reduction="none")
    torch.testing.assert_close(log_ce(logits, y).exp(), ce, rtol=1e-9, atol=0)


def test_log_ce_far_below_float64_hand_computed():
    # logits (1000, 0, 0), label 0: CE = log(1 + 2 e^-1000); log CE = log 2 - 1000 (+ O(e^-1000))
    logits = torch.tensor([[1000.0, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    out = log_ce(logits, torch.tensor([0]))
    assert float(out.detach()) == pytest.approx(math.log(2) - 1000, abs=1e-12)
    (g,) = torch.autograd.grad(out.sum(), logits)
    # d/df of log(2 e^{-f0}) with f1 = f2 = 0: (-1, 1/2, 1/2)
    torch.testing.assert_close(g, torch.tensor([[-1.0, 0.5, 0.5]], dtype=torch.float64))


def test_log_softplus_is_continuous_at_the_switch_and_finite():
    z = torch.tensor([-30.0 - 1e-9, -30.0 + 1e-9, -1e6, 50.0], dtype=torch.float64)
    v = log_softplus(z)
    assert torch.isfinite(v).all()
    assert abs(float(v[0] - v[1])) < 1e-8
    assert float(v[2]) == -1e6
    assert float(v[3]) == pytest.approx(math.log(50.0), rel=1e-12)


def test_log_expm1_exp():
    for u in (1e-30, 1e-3, 0.5, 3.0, 800.0):
        expect = u if u > 700 else math.log(math.expm1(u))
        assert log_expm1_exp(math.log(u)) == pytest.approx(expect, rel=1e-12)
    assert log_expm1_exp(-2000.0) == pytest.approx(-2000.0)


def test_margin_stats_hand_computed_and_smoothed_below_normalized():
    # two examples, labels 0 and 1: q = (3 - 1, 5 - 4) = (2, 1); q_min = 1; rho = 2, L = 2
    logits = torch.tensor([[3.0, 1.0, -1.0], [4.0, 5.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([0, 1])
    torch.testing.assert_close(margins(logits, y), torch.tensor([2.0, 1.0], dtype=torch.float64))
    s = stats_from_logits(logits, y, rho=2.0, degree=2)
    assert s.q_min == 1.0 and s.normalized_margin == pytest.approx(0.25)
    assert s.log10_normalized_margin == pytest.approx(math.log10(0.25))
    ce = F.cross_entropy(logits, y, reduction="none")
    assert s.log10_loss == pytest.approx(math.log10(float(ce.mean())), rel=1e-12)
    expect = -math.log(math.expm1(float(ce.sum()))) / 4
    assert s.smoothed_normalized_margin == pytest.approx(expect, rel=1e-12)
    assert s.smoothed_normalized_margin <= s.normalized_margin
    assert s.accuracy == 1.0


# ---------------------------------------------------------------- loss-based schedule


def test_schedule_hand_computed():
    s = LossBasedLR(LossBasedLRConfig(alpha=0.5), log_loss=math.log(0.2))
    assert s.log_eta == pytest.approx(math.log(0.5 / 0.2))
    # a batch with loss 0.1 steps by alpha * 0.1 / 0.2 along grad log L_B
    assert s.step_scale(math.log(0.1)) == pytest.approx(0.25)
    assert s.end_epoch(math.log(0.1)) is True
    assert s.alpha == pytest.approx(0.5 * 2**0.2) and s.log_loss == math.log(0.1)
    assert s.end_epoch(math.log(0.1)) is False  # not lower: redo, alpha / 2^(1/10)
    assert s.alpha == pytest.approx(0.5 * 2**0.2 / 2**0.1)
    assert s.log_loss == math.log(0.1)
    assert s.end_epoch(float("nan")) is False
    assert GROW == 2**0.2 and SHRINK == 2**0.1


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("inf"), float("nan")])
def test_alpha_must_be_positive(alpha):
    with pytest.raises(ValueError, match="alpha"):
        LossBasedLRConfig(alpha=alpha)
    with pytest.raises(ValueError, match="alpha"):
        config_from_dict({"alpha": alpha})


@pytest.mark.parametrize("th", [(-10.0, -10.0), (-10.0, -20.0, -15.0), (-5.0, float("nan"))])
def test_thresholds_must_decrease(th):
    with pytest.raises(ValueError, match="checkpoint_log10_losses"):
        MarginTrainConfig(checkpoint_log10_losses=th)


def test_thresholds_from_losses():
    cfg = config_from_dict({"checkpoint_losses": [1e-10, 1e-15], "alpha": 0.3, "epochs": 5})
    assert cfg.checkpoint_log10_losses == pytest.approx((-10.0, -15.0))
    assert cfg.schedule.alpha == 0.3 and cfg.epochs == 5
    with pytest.raises(ValueError, match="checkpoint_log10_losses"):
        config_from_dict({"checkpoint_losses": [1e-15, 1e-10]})


class Linear2(nn.Module):
    """Two parameters, two logits (t.x, -t.x): 1-homogeneous."""

    homogeneity_degree = 1

    def __init__(self, theta):
        super().__init__()
        self.theta = nn.Parameter(torch.tensor(theta, dtype=torch.float64))

    def forward(self, x):
        s = x @ self.theta
        return torch.stack((s, -s), dim=1)


def test_one_epoch_is_alpha_times_grad_log_loss_hand_computed():
    # one example x = (1, 2), label 0: d = 2 t.x, L = softplus(-d); full batch, so the
    # step is alpha * grad log L = -alpha * 2 x sigmoid(-d) / softplus(-d)
    t0, x, alpha = (0.5, 0.25), torch.tensor([[1.0, 2.0]]), 0.1
    d = 2 * (t0[0] * 1 + t0[1] * 2)
    sp = math.log1p(math.exp(-d))
    coef = alpha * 2 * (1 / (1 + math.exp(d))) / sp
    expect = (t0[0] + coef * 1, t0[1] + coef * 2)
    net = Linear2(t0)
    cfg = MarginTrainConfig(epochs=1, batch_size=1, schedule=LossBasedLRConfig(alpha=alpha))
    res = train_margin(net, x, torch.tensor([0]), cfg, seed=0)
    torch.testing.assert_close(net.theta.detach(), torch.tensor(expect, dtype=torch.float64))
    assert res.history[1]["alpha"] == alpha and res.rollbacks == 0
    assert res.history[1]["log10_eta"] == pytest.approx(math.log10(alpha / sp))


def test_an_epoch_that_raises_the_loss_is_rolled_back_and_redone():
    # the same input with both labels: the loss is minimal at t.x = 0; a huge alpha overshoots
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    y = torch.tensor([0, 1])
    net = Linear2((0.3, 0.0))
    cfg = MarginTrainConfig(epochs=1, batch_size=2, schedule=LossBasedLRConfig(alpha=50.0))
    res = train_margin(net, x, y, cfg, seed=0)
    k = res.rollbacks
    assert k >= 1
    assert res.history[1]["alpha"] == pytest.approx(50.0 / SHRINK**k)
    assert res.history[1]["log10_train_loss"] < res.history[0]["log10_train_loss"]
    # the accepted epoch started from the initial parameters (rolled back exactly): replay it
    ref = Linear2((0.3, 0.0))
    ref_cfg = MarginTrainConfig(
        epochs=1, batch_size=2, schedule=LossBasedLRConfig(alpha=50.0 / SHRINK**k)
    )
    train_margin(ref, x, y, ref_cfg, seed=0)
    torch.testing.assert_close(ref.theta, net.theta)


# ---------------------------------------------------------------- far below float64


def test_training_goes_far_below_float64_with_every_value_finite():
    # generic: a bias-free two-layer ReLU net of Study FA (2 heads read (+1, -1), trained
    # first layer, 1-homogeneous) on FA's binary cluster data; class index 0 = J+, 1 = J-
    data = make_cluster_data(ClusterDataConfig(d=10, k=4, n_train=12, n_test=4), seed=0)
    x, label = data.train.x.double(), (data.train.y < 0).long()
    w, b = init_two_layer(10, 2, TwoLayerConfig(m=4, bias=False), seed=0)
    net = TwoLayerFixed(w.double(), b.double(), torch.tensor([1.0, -1.0]))
    cfg = MarginTrainConfig(
        epochs=2000,
        batch_size=4,
        stop_log10_loss=-400.0,
        checkpoint_log10_losses=(-10.0, -100.0, -300.0),
        schedule=LossBasedLRConfig(alpha=0.1),
    )
    res = train_margin(net, x, label, cfg, seed=0)
    assert res.stop_reason == "stop_log10_loss"
    assert res.history[-1]["log10_train_loss"] < -400
    for row in res.history:
        assert all(math.isfinite(v) for v in row.values()), row
    assert all(torch.isfinite(p).all() for p in net.parameters())
    names = [c.name for c in res.checkpoints]
    assert names == ["model-1", "model-2", "model-3", "final"]
    epochs = [c.epoch for c in res.checkpoints]
    assert epochs == sorted(epochs)
    for ck, th in zip(res.checkpoints[:3], (-10.0, -100.0, -300.0), strict=True):
        assert ck.log10_loss < th
        before = res.history[ck.epoch - 1]["log10_train_loss"]
        assert before >= th  # the *first* epoch below the threshold
    # the normalized margin of a 1-homogeneous net is q_min / rho, positive once fit
    last = res.history[-1]
    assert last["normalized_margin"] == pytest.approx(last["q_min"] / last["rho"])
    assert 0 < last["smoothed_normalized_margin"] <= last["normalized_margin"]


@pytest.mark.parametrize("dtype", ["float16", "double", 32])
def test_training_dtype_is_validated(dtype):
    with pytest.raises(ValueError, match="dtype"):
        MarginTrainConfig(dtype=dtype)
    with pytest.raises(ValueError, match="dtype"):
        config_from_dict({"dtype": dtype})


def test_float32_training_goes_far_below_float64_and_refuses_a_float64_net():
    # float32 parameters, float64 logit differences and log L: the same run as above in
    # float32 still reaches 1e-400 with every value finite and the parameters kept float32
    data = make_cluster_data(ClusterDataConfig(d=10, k=4, n_train=12, n_test=4), seed=0)
    x, label = data.train.x.float(), (data.train.y < 0).long()
    w, b = init_two_layer(10, 2, TwoLayerConfig(m=4, bias=False), seed=0)
    cfg = config_from_dict(
        dict(epochs=2000, batch_size=4, stop_log10_loss=-400.0, alpha=0.1, dtype="float32")
    )
    assert cfg.dtype == "float32" and cfg.torch_dtype == torch.float32
    with pytest.raises(ValueError, match="dtype: the training config says float32"):
        train_margin(TwoLayerFixed(w.double(), b.double(), torch.tensor([1.0, -1.0])),
                     x, label, cfg, seed=0)  # fmt: skip
    net = TwoLayerFixed(w.float(), b.float(), torch.tensor([1.0, -1.0]))
    res = train_margin(net, x, label, cfg, seed=0)
    assert res.stop_reason == "stop_log10_loss"
    assert res.history[-1]["log10_train_loss"] < -400
    for row in res.history:
        assert all(math.isfinite(v) for v in row.values()), row
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in net.parameters())
    assert res.history[-1]["normalized_margin"] > 0


# ---------------------------------------------------------------- certificate and attacks


def _conv_matrix(conv: nn.Conv2d, hw: tuple[int, int]) -> torch.Tensor:
    """The dense matrix of a bias-free conv on (c_in, h, w) inputs, column = basis image."""
    n = conv.in_channels * hw[0] * hw[1]
    basis = torch.eye(n, dtype=torch.float64).reshape(n, conv.in_channels, *hw)
    return F.conv2d(basis, conv.weight.double(), padding=conv.padding).reshape(n, -1).T


def test_circular_conv_norm_is_exact():
    g = torch.Generator().manual_seed(0)
    conv = nn.Conv2d(2, 3, 3, padding=1, bias=False, padding_mode="circular").double()
    conv.weight.data = torch.randn(3, 2, 3, 3, generator=g, dtype=torch.float64)
    n = 2 * 5 * 5
    basis = torch.eye(n, dtype=torch.float64).reshape(n, 2, 5, 5)
    dense = conv(basis).reshape(n, -1).T
    exact = float(torch.linalg.matrix_norm(dense.detach(), ord=2))
    assert circular_conv_norm(conv.weight, (5, 5)) == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("k", [3, 5])
def test_zero_padded_conv_bound_is_an_upper_bound(k):
    g = torch.Generator().manual_seed(k)
    conv = nn.Conv2d(2, 3, k, padding=k // 2, bias=False).double()
    conv.weight.data = torch.randn(3, 2, k, k, generator=g, dtype=torch.float64)
    exact = float(torch.linalg.matrix_norm(_conv_matrix(conv, (6, 6)), ord=2))
    bound = conv_norm_bound(conv, (6, 6))
    assert exact <= bound * (1 + 1e-12)
    assert bound < 1.5 * exact  # and not vacuous on this case


def _trained_tiny_cnn():
    """A tiny CNN fit to 24 two-blob 'images' (1, 8, 8) in [0, 1] of 3 classes."""
    g = torch.Generator().manual_seed(3)
    templates = torch.rand(3, 1, 8, 8, generator=g, dtype=torch.float64)
    y = torch.arange(24) % 3
    x = templates[y] + 0.05 * torch.randn(24, 1, 8, 8, generator=g, dtype=torch.float64)
    x = x.clamp(0, 1)
    net = build_homogeneous_cnn((1, 8, 8), 3, TINY, seed=0)
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    for _ in range(150):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    return net.eval(), x, y


def test_certificate_is_below_every_adversarial_distance_and_lipschitz_holds():
    net, x, y = _trained_tiny_cnn()
    cert = certified_radius(net, x, y)
    assert (cert.radius <= cert.radius_pairwise * (1 + 1e-12)).all()
    bound = cnn_lipschitz(net)
    g = torch.Generator().manual_seed(5)
    # brute force: margins along random pairs never change faster than beta
    x2 = x + 0.1 * torch.randn(x.shape, generator=g, dtype=torch.float64)
    with torch.no_grad():
        q1, q2 = margins(net(x), y), margins(net(x2), y)
    slope = (q1 - q2).abs() / (x - x2).flatten(1).norm(dim=1)
    assert (slope <= bound.beta).all()
    # along 16 random directions per point, the first misclassified point is farther than
    # the certified radius (unconstrained: the certificate ignores the box)
    dirs = torch.randn(16, *x.shape[1:], generator=g, dtype=torch.float64)
    dirs = dirs / dirs.flatten(1).norm(dim=1)[:, None, None, None]
    ts = torch.linspace(0, 4 * float(cert.radius_pairwise.max()) + 1, 200, dtype=torch.float64)
    for i in range(0, len(x), 3):
        with torch.no_grad():
            pts = x[i] + ts[:, None, None, None, None] * dirs[None]  # (T, 16, 1, 8, 8)
            wrong = net(pts.reshape(-1, 1, 8, 8)).argmax(1).reshape(len(ts), 16) != y[i]
        first = torch.where(wrong.any(0), ts[wrong.float().argmax(0)], math.inf)  # (16,)
        assert float(first.min()) >= float(cert.radius_pairwise[i]) - 1e-12


def test_fab_distance_between_certificate_and_pgd_bisection():
    net, x, y = _trained_tiny_cnn()
    x, y = x[:9], y[:9]
    fab = fab_distances(net, x, y, FABConfig(norm="l2", n_iter=100, restarts=2), seed=0)
    pgd = pgd_bisection(
        net, x, y, BisectionConfig(steps=30, restarts=2, start=0.5), torch_generator(0, "t")
    )
    cert = certified_radius(net, x, y)
    assert torch.isfinite(fab).all() and torch.isfinite(pgd).all()
    assert (cert.radius_pairwise <= fab).all()
    assert (fab <= pgd * 1.02).all(), (fab, pgd)
    # the FAB distance is attained: a misclassified point at that distance exists (FAB's
    # own check), and l_inf distances are at most the l2 ones
    linf = fab_distances(net, x, y, FABConfig(norm="linf", n_iter=100), seed=0)
    assert (linf <= fab * (1 + 1e-6)).all()
    eps = torch.tensor([0.0, float(fab.median()), float(fab.max())], dtype=torch.float64)
    acc = robust_accuracy_curve(fab, eps)
    assert acc[0] == 1.0 and acc[-1] == 0.0 and 0 < acc[1] < 1


def test_a_checkpoint_equal_to_an_earlier_one_is_not_attacked_again(monkeypatch):
    """``final`` at the epoch of model-2 holds the same parameters: it gets model-2's rows
    and costs no attack; a checkpoint that differs by one weight is attacked."""
    import copy

    import ibrobust.studies.margin.experiment as experiment

    calls = []

    def fake_point_robustness(net, x, y, boxed, cfg, gen, tick=None):
        calls.append(net)
        return pd.DataFrame({"index": range(len(x)), "margin": float(len(calls))})

    monkeypatch.setattr(experiment, "point_robustness", fake_point_robustness)
    a = build_homogeneous_cnn((1, 8, 8), 10, TINY, seed=0)
    b = build_homogeneous_cnn((1, 8, 8), 10, TINY, seed=1)
    nudged = copy.deepcopy(b)
    with torch.no_grad():
        nudged.fc2.weight[0, 0] += 1e-12
    x = torch.rand(3, 1, 8, 8, dtype=torch.float64)
    data = experiment.RunData(x, torch.zeros(3, dtype=torch.long), x, torch.zeros(3).long(),
                              torch.ones(10), True)  # fmt: skip
    cfg = experiment.MarginRobustConfig(attack_points=3, bisection_points=0)
    nets = {"model-1": a, "model-2": b, "final": copy.deepcopy(b), "other": nudged}
    out = experiment.checkpoint_robustness(nets, data, cfg, seed=0)
    assert len(calls) == 6  # model-1, model-2 and other, two splits each; final reuses model-2
    by = {k: d["margin"].tolist() for k, d in out.groupby(["checkpoint", "split"])}
    assert by[("final", "train")] == by[("model-2", "train")] == [3.0] * 3
    assert by[("final", "test")] == by[("model-2", "test")] == [4.0] * 3
    assert by[("other", "train")] == [5.0] * 3
    assert list(out["checkpoint"].unique()) == ["model-1", "model-2", "final", "other"]
