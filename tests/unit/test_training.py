"""Full-batch GD (ibrobust.training.full_batch) and the training losses."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.readout import readout_for
from ibrobust.models.two_layer import TwoLayerConfig, TwoLayerFixed, init_two_layer
from ibrobust.training.full_batch import GDConfig, checkpoint_steps, train_gd
from ibrobust.training.losses import (
    fine_cross_entropy,
    logistic_margin_loss,
    supervised_accuracy,
    supervised_loss,
)

torch.set_num_threads(1)

SUPERVISIONS = ("binary", "multiclass")


def problem(supervision: str, d=50, n=30, k=4, m=5, seed=0):
    data = make_cluster_data(ClusterDataConfig(d=d, k=k, n_train=n, n_test=1), seed)
    heads = 2 if supervision == "binary" else k
    w0, b0 = init_two_layer(d, heads, TwoLayerConfig(m=m), seed)
    readout = readout_for(supervision, data.sign)
    tr = data.train
    return tr.x, tr.y, tr.fine, w0, b0, readout


# ---------------------------------------------------------------------------- losses


def test_losses_hand_values():
    heads = torch.tensor([[2.0, 0.5], [0.0, 1.0]])
    readout = torch.tensor([1.0, -1.0])
    y = torch.tensor([1.0, 1.0])
    # f = (1.5, -1.0): mean(log(1+e^-1.5), log(1+e^1))
    expected = (math.log1p(math.exp(-1.5)) + math.log1p(math.exp(1.0))) / 2
    assert logistic_margin_loss(heads, readout, y).item() == pytest.approx(expected, rel=1e-6)
    fine = torch.tensor([0, 0])
    ce = (-math.log(math.exp(2) / (math.exp(2) + math.exp(0.5))) - math.log(1 / (1 + math.e))) / 2
    assert fine_cross_entropy(heads, fine).item() == pytest.approx(ce, rel=1e-6)
    assert supervised_loss("binary", heads, readout, y, fine).item() == pytest.approx(
        expected, rel=1e-6
    )
    assert supervised_loss("multiclass", heads, readout, y, fine).item() == pytest.approx(
        ce, rel=1e-6
    )
    assert supervised_accuracy("binary", heads, readout, y, fine) == 0.5
    assert supervised_accuracy("multiclass", heads, readout, y, fine) == 0.5
    with pytest.raises(ValueError):
        supervised_loss("foo", heads, readout, y, fine)


def test_logistic_loss_is_stable_for_large_margins():
    heads = torch.tensor([[1e4, 0.0], [0.0, 1e4]])
    loss = logistic_margin_loss(heads, torch.tensor([1.0, -1.0]), torch.tensor([1.0, 1.0]))
    assert loss.item() == pytest.approx(1e4 / 2)


# ---------------------------------------------------------------------------- gram == direct


@pytest.mark.parametrize("supervision", SUPERVISIONS)
def test_gram_and_direct_give_same_iterates(supervision):
    x, y, fine, w0, b0, readout = problem(supervision)
    common = dict(lr=0.5, max_steps=150, stop_loss=0.0, n_checkpoints=6, log_every=10)
    rg = train_gd(x, y, fine, w0, b0, readout, supervision, GDConfig(method="gram", **common))
    rd = train_gd(x, y, fine, w0, b0, readout, supervision, GDConfig(method="direct", **common))
    assert rg.epochs == rd.epochs == 150
    # the run moved the weights well beyond the tolerance
    assert (rd.weight - w0).norm() > 0.1 * w0.norm()
    torch.testing.assert_close(
        rg.weight, rd.weight, rtol=1e-4, atol=1e-4 * rd.weight.abs().max().item()
    )
    torch.testing.assert_close(rg.bias, rd.bias, rtol=1e-4, atol=1e-4 * rd.bias.abs().max().item())
    assert [h["epoch"] for h in rg.history] == [h["epoch"] for h in rd.history]
    assert [h["acc"] for h in rg.history] == [h["acc"] for h in rd.history]
    np.testing.assert_allclose(
        [h["loss"] for h in rg.history], [h["loss"] for h in rd.history], rtol=1e-4
    )
    assert rg.checkpoints.keys() == rd.checkpoints.keys()
    for t in rg.checkpoints:
        torch.testing.assert_close(rg.checkpoints[t][0], rd.checkpoints[t][0], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- one step


@pytest.mark.parametrize("method", ["gram", "direct"])
@pytest.mark.parametrize("supervision", SUPERVISIONS)
def test_one_step_is_w_minus_lr_grad(supervision, method):
    x, y, fine, w0, b0, readout = problem(supervision, d=20, n=12, m=3, seed=1)
    lr = 0.7
    net = TwoLayerFixed(w0, b0, readout)
    loss = supervised_loss(supervision, net(x), net.readout, y, fine)
    gw, gb = torch.autograd.grad(loss, [net.weight, net.bias])
    assert gw.abs().max() > 1e-3
    cfg = GDConfig(lr=lr, max_steps=1, stop_loss=0.0, method=method, n_checkpoints=2)
    res = train_gd(x, y, fine, w0, b0, readout, supervision, cfg)
    assert res.epochs == 1 and not res.converged
    torch.testing.assert_close(res.weight, w0 - lr * gw, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(res.bias, b0 - lr * gb, rtol=1e-5, atol=1e-6)
    # history logs the loss at step 0 (before the update) and the final step
    assert res.history[0]["epoch"] == 0
    assert res.history[0]["loss"] == pytest.approx(loss.item(), rel=1e-6)
    assert res.history[-1]["epoch"] == 1
    loss1 = supervised_loss(
        supervision, TwoLayerFixed(res.weight, res.bias, readout)(x), readout, y, fine
    )
    assert res.history[-1]["loss"] == pytest.approx(loss1.item(), rel=1e-5)
    assert loss1.item() < loss.item()


def test_inputs_are_not_modified():
    x, y, fine, w0, b0, readout = problem("binary", d=20, n=12, m=3)
    w_copy, b_copy = w0.clone(), b0.clone()
    for method in ("gram", "direct"):
        train_gd(x, y, fine, w0, b0, readout, "binary", GDConfig(max_steps=5, method=method))
        assert torch.equal(w0, w_copy) and torch.equal(b0, b_copy)


@pytest.mark.parametrize("supervision", SUPERVISIONS)
def test_gram_and_direct_agree_in_float64(supervision):
    x, y, fine, w0, b0, readout = (
        t.double() if t.is_floating_point() else t for t in problem(supervision, d=20, n=12, m=3)
    )
    cfg = dict(lr=0.5, max_steps=20, stop_loss=0.0)
    rd = train_gd(x, y, fine, w0, b0, readout, supervision, GDConfig(method="direct", **cfg))
    rg = train_gd(x, y, fine, w0, b0, readout, supervision, GDConfig(method="gram", **cfg))
    assert rg.weight.dtype == torch.float64
    torch.testing.assert_close(rg.weight, rd.weight, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------- stopping


@pytest.mark.parametrize("method", ["gram", "direct"])
def test_stops_on_converged(method):
    x, y, fine, w0, b0, readout = problem("binary")
    cfg = GDConfig(lr=0.5, max_steps=2000, stop_loss=0.2, log_every=1000, method=method)
    res = train_gd(x, y, fine, w0, b0, readout, "binary", cfg)
    assert res.converged and 0 < res.epochs < cfg.max_steps
    last = res.history[-1]
    assert last["epoch"] == res.epochs and last["loss"] < 0.2 and last["acc"] == 1.0
    # the returned weights are the ones evaluated at the stop
    f = TwoLayerFixed(res.weight, res.bias, readout).binary_score(x)
    assert (y * f > 0).all()
    assert F.softplus(-y * f).mean().item() == pytest.approx(last["loss"], rel=1e-5)
    # one step earlier the criterion was not met: stopping then is "max_steps", not converged
    early = train_gd(
        x,
        y,
        fine,
        w0,
        b0,
        readout,
        "binary",
        GDConfig(lr=0.5, max_steps=res.epochs - 1, stop_loss=0.2, method=method),
    )
    assert not early.converged and early.epochs == res.epochs - 1


def test_stops_at_max_steps_without_convergence():
    x, y, fine, w0, b0, readout = problem("multiclass")
    res = train_gd(
        x,
        y,
        fine,
        w0,
        b0,
        readout,
        "multiclass",
        GDConfig(lr=0.5, max_steps=37, stop_loss=1e-12, log_every=10),
    )
    assert not res.converged and res.epochs == 37
    assert [h["epoch"] for h in res.history] == [0, 10, 20, 30, 37]


def test_low_loss_without_full_accuracy_does_not_stop():
    # two copies of a point with opposite labels: accuracy can never reach 1
    x, y, fine, w0, b0, readout = problem("binary", d=20, n=12, m=3)
    x = torch.cat([x, x[:1]])
    y = torch.cat([y, -y[:1]])
    fine = torch.cat([fine, fine[:1]])
    res = train_gd(
        x,
        y,
        fine,
        w0,
        b0,
        readout,
        "binary",
        GDConfig(lr=0.5, max_steps=25, stop_loss=100.0, log_every=5),
    )
    assert res.epochs == 25 and not res.converged
    assert all(h["loss"] < 100.0 and h["acc"] < 1.0 for h in res.history)


def test_on_log_receives_history():
    x, y, fine, w0, b0, readout = problem("binary", d=20, n=12, m=3)
    seen = []
    res = train_gd(
        x,
        y,
        fine,
        w0,
        b0,
        readout,
        "binary",
        GDConfig(max_steps=20, stop_loss=0.0, log_every=7),
        on_log=seen.append,
    )
    assert seen == res.history
    assert [h["epoch"] for h in seen] == [0, 7, 14, 20]


@pytest.mark.parametrize("method", ["gram", "direct"])
def test_diverging_lr_raises(method):
    # The logistic/CE gradients are bounded and the data separable, so GD only "diverges"
    # when the float32 iterates overflow: lr=1e39 makes the first update inf, the step-1
    # pre-activations inf - inf = nan, and the non-finite loss must be reported.
    x, y, fine, w0, b0, readout = problem("binary", d=20, n=12, m=3)
    cfg = GDConfig(lr=1e39, max_steps=50, stop_loss=0.0, method=method)
    with pytest.raises(FloatingPointError, match="diverged at step 1"):
        train_gd(x, y, fine, w0, b0, readout, "binary", cfg)


def test_dimension_mismatch_and_config_validation():
    x, y, fine, w0, b0, readout = problem("binary", d=20, n=12, m=3)
    with pytest.raises(ValueError, match="dimension"):
        train_gd(x[:, :-1], y, fine, w0, b0, readout, "binary", GDConfig(max_steps=2))
    for kw, key in (
        (dict(lr=0.0), "lr"),
        (dict(max_steps=0), "max_steps"),
        (dict(method="adam"), "method"),
    ):
        with pytest.raises(ValueError, match=key):
            GDConfig(**kw)


# ---------------------------------------------------------------------------- checkpoints


@pytest.mark.parametrize("max_steps, n", [(1000, 16), (5000, 16), (10, 50), (7, 3), (1, 4)])
def test_checkpoint_steps(max_steps, n):
    steps = checkpoint_steps(max_steps, n)
    assert steps[0] == 0 and steps[-1] == max_steps
    assert steps == sorted(set(steps))  # strictly increasing, unique
    assert len(steps) <= n + 1
    assert all(isinstance(s, int) for s in steps)


def test_checkpoint_steps_log_spaced():
    assert checkpoint_steps(1000, 4) == [0, 1, 10, 100, 1000]
    assert checkpoint_steps(10, 50) == list(range(11))
    steps = np.array(checkpoint_steps(10**6, 7)[1:])
    np.testing.assert_allclose(steps[1:] / steps[:-1], 10.0)


@pytest.mark.parametrize("method", ["gram", "direct"])
def test_checkpoints_dict(method):
    x, y, fine, w0, b0, readout = problem("binary", d=20, n=12, m=3)
    cfg = GDConfig(lr=0.5, max_steps=40, stop_loss=0.0, n_checkpoints=5, method=method)
    res = train_gd(x, y, fine, w0, b0, readout, "binary", cfg)
    assert set(res.checkpoints) == set(checkpoint_steps(40, 5))
    w_init, b_init = res.checkpoints[0]
    assert torch.equal(w_init, w0) and torch.equal(b_init, b0)
    w_last, b_last = res.checkpoints[40]
    assert torch.equal(w_last, res.weight) and torch.equal(b_last, res.bias)
    # an intermediate checkpoint is the end point of a shorter run
    t = sorted(res.checkpoints)[-2]
    short = train_gd(
        x,
        y,
        fine,
        w0,
        b0,
        readout,
        "binary",
        GDConfig(lr=0.5, max_steps=t, stop_loss=0.0, method=method),
    )
    torch.testing.assert_close(res.checkpoints[t][0], short.weight, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(res.checkpoints[t][1], short.bias, rtol=1e-6, atol=1e-7)


def test_final_step_checkpointed_on_early_stop():
    x, y, fine, w0, b0, readout = problem("binary")
    res = train_gd(
        x,
        y,
        fine,
        w0,
        b0,
        readout,
        "binary",
        GDConfig(lr=0.5, max_steps=5000, stop_loss=0.2, n_checkpoints=3),
    )
    assert res.converged and res.epochs in res.checkpoints
    assert torch.equal(res.checkpoints[res.epochs][0], res.weight)
