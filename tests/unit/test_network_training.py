"""Generic network training (ibrobust.training.network) and the fit stage (stages.networks)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from ibrobust import kinds
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.models.readout import readout_for
from ibrobust.models.registry import BuildContext, build_model, load_model
from ibrobust.stages.networks import fit
from ibrobust.training.losses import exponential_margin_loss, supervised_loss
from ibrobust.training.network import (
    NetTrainConfig,
    checkpoint_epochs,
    net_train_fields,
    resolve_device,
    train_network,
)

torch.set_num_threads(1)


class Linear2(nn.Module):
    """f(x) = (<w, x>, 0) with readout (+1, -1): the binary score is <w, x>."""

    def __init__(self, w, dtype=torch.float64):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w, dtype=dtype))
        self.register_buffer("readout", torch.tensor([1.0, -1.0], dtype=dtype))

    def forward(self, x):
        s = x @ self.w
        return torch.stack([s, torch.zeros_like(s)], 1)


def test_device_auto_is_cuda_only_where_torch_sees_cuda(monkeypatch):
    """The config key ``device`` (schemas: auto | cpu | cuda) as the network trainer reads it:
    auto (and None) = CUDA when torch.cuda.is_available(), else the CPU. Only the resolution
    is patched; no tensor touches a fake CUDA device."""
    here = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == resolve_device(None) == torch.device(here)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == resolve_device(None) == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="config key device: 'cuda'.*is_available"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == resolve_device(None) == torch.device("cuda")
    assert resolve_device("cuda") == torch.device("cuda")
    assert resolve_device("cpu") == torch.device("cpu")  # an explicit cpu stays the CPU


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only path")
def test_auto_device_trains_on_the_cpu_without_cuda():
    """``device: auto`` (config.yaml's default) on a machine without CUDA: the same step as
    ``device="cpu"``, and the net ends on the CPU."""
    x = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    y = torch.tensor([1.0], dtype=torch.float64)
    cfg = NetTrainConfig(algorithm="gd", lr=0.1, max_epochs=1, norm="linf", scale="unit")
    nets = [Linear2([0.5, 0.25]), Linear2([0.5, 0.25])]
    for net, device in zip(nets, ("auto", "cpu"), strict=True):
        train_network(net, x, y, torch.zeros(1, dtype=torch.long), "binary", cfg, 0, device)
        assert net.w.device.type == "cpu"
    torch.testing.assert_close(nets[0].w.detach(), nets[1].w.detach())


def test_sign_descent_step_by_hand():
    # one point x = (1, -2), y = +1, logistic loss: grad_w = -sigmoid(-<w,x>) y x
    net = Linear2([0.5, 0.25])  # <w, x> = 0
    x = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    y = torch.tensor([1.0], dtype=torch.float64)
    cfg = NetTrainConfig(algorithm="gd", lr=0.1, max_epochs=1, norm="linf", scale="unit")
    train_network(net, x, y, torch.zeros(1, dtype=torch.long), "binary", cfg, seed=0, device="cpu")
    # grad = -0.5 * (1, -2) = (-0.5, 1.0); sign descent: w - 0.1 * sign(grad)
    torch.testing.assert_close(net.w.detach(), torch.tensor([0.6, 0.15], dtype=torch.float64))


def test_gd_step_by_hand_and_exponential_loss():
    net = Linear2([0.0, 0.0])
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64)
    y = torch.tensor([1.0, -1.0], dtype=torch.float64)
    cfg = NetTrainConfig(algorithm="gd", lr=0.5, max_epochs=1, loss="exponential")
    train_network(net, x, y, torch.zeros(2, dtype=torch.long), "binary", cfg, seed=0, device="cpu")
    # L = mean exp(-y <w,x>); at w = 0: grad = -mean(y x) = -((1,2) - (3,-1)) / 2 = (1, -1.5)
    torch.testing.assert_close(net.w.detach(), torch.tensor([-0.5, 0.75], dtype=torch.float64))


def test_exponential_loss_is_stable_for_huge_margins():
    heads = torch.tensor([[1e4, 0.0], [-800.0, 0.0]], dtype=torch.float64)
    readout = torch.tensor([1.0, -1.0], dtype=torch.float64)
    y = torch.tensor([1.0, 1.0], dtype=torch.float64)
    big = exponential_margin_loss(heads[:1], readout, y[:1])
    assert big == 0.0 and torch.isfinite(big)  # exp(-1e4) underflows to 0, no NaN
    # exp(800) overflows float64 (max ~1.8e308 = e^709.8): the loss is inf, honestly
    assert math.isinf(float(exponential_margin_loss(heads, readout, y)))
    small = torch.tensor([[2.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    expect = (math.exp(-2.0) + math.exp(1.0)) / 2
    assert float(exponential_margin_loss(small, readout, y)) == pytest.approx(expect, rel=1e-12)
    with pytest.raises(ValueError, match="cross-entropy"):
        supervised_loss(
            "multiclass", small, readout, y, torch.zeros(2, dtype=torch.long), "exponential"
        )


def _data(seed=0, d=20, k=4, n=40):
    return dataset_from_arrays(
        make_cluster_data(ClusterDataConfig(d=d, k=k, n_train=n, n_test=30), seed).arrays()
    )


def test_minibatch_training_is_seeded_and_learns():
    data = _data()
    spec = {"kind": "mlp", "hidden": [8]}

    def run(seed):
        res = fit(
            spec,
            {"kind": "adam", "lr": 0.05, "epochs": 5, "batch_size": 8},
            data,
            "multiclass",
            seed,
        )
        return res

    a, b, c = run(0), run(0), run(1)
    for k in a.state["state_dict"]:
        torch.testing.assert_close(a.state["state_dict"][k], b.state["state_dict"][k])
    assert any(
        not torch.equal(a.state["state_dict"][k], c.state["state_dict"][k])
        for k in a.state["state_dict"]
    )
    assert a.metrics["train.acc"] == 1.0 and a.metrics["test.fine_acc"] > 0.9
    assert list(a.history.epoch) == [1, 2, 3, 4, 5]
    net = load_model(a.state)
    x = data.test.x[:5]
    assert torch.equal(net(x).argmax(1), load_model(b.state)(x).argmax(1))


def test_stop_loss_and_checkpoints():
    data = _data()
    cfg = NetTrainConfig(
        algorithm="sgd", lr=0.5, max_epochs=200, batch_size=None, stop_loss=1e-2, n_checkpoints=3
    )
    net = Linear2([0.0] * 20, dtype=torch.float32)
    res = train_network(
        net, data.train.x, data.train.y, data.train.fine, "binary", cfg, seed=0, device="cpu"
    )
    assert res.converged and res.epochs < 200
    assert res.history[-1]["loss"] < 1e-2 and res.history[-1]["acc"] == 1.0
    assert set(res.checkpoints) <= checkpoint_epochs(200, 3) and 1 in res.checkpoints
    assert checkpoint_epochs(100, 0) == set()
    assert checkpoint_epochs(100, 3) == {1, 10, 100}


def test_gram_path_equals_generic_gd():
    """The same GD iterates through the exact fast path and the generic trainer."""
    data = _data(n=16)
    model = {"kind": "two_layer", "m": 2}
    gd = {"kind": "gd", "lr": 0.3, "max_steps": 25, "stop_loss": 1e-12, "n_checkpoints": 3}
    assert kinds.trainer(model, gd) == "gram_gd"
    fast = fit(model, gd, data, "binary", seed=3)
    assert fast.state["ckpt_steps"].tolist()[0] == 0 and fast.metrics["train.steps"] == 25
    net = build_model(model, BuildContext((20,), readout_for("binary", data.sign), 3))
    cfg = NetTrainConfig(**net_train_fields(gd))
    assert cfg.algorithm == "gd" and cfg.max_epochs == 25 and cfg.norm == "l2"
    train_network(net, data.train.x, data.train.y, data.train.fine, "binary", cfg, 3, "cpu")
    # 25 updates each (train_gd counts steps from 0 and stops at max_steps)
    torch.testing.assert_close(net.weight.detach(), fast.state["weight"], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(net.bias.detach(), fast.state["bias"], atol=1e-5, rtol=1e-4)


def test_sign_descent_on_two_layer_keeps_decomposition_fields():
    data = _data(n=16)
    sd = {
        "kind": "gd",
        "norm": "linf",
        "scale": "unit",
        "lr": 1e-3,
        "max_steps": 20,
        "n_checkpoints": 3,
    }
    assert kinds.trainer({"kind": "two_layer"}, sd) == "network"
    res = fit({"kind": "two_layer", "m": 2}, sd, data, "multiclass", seed=0)
    st = res.state
    assert st["ckpt_steps"].tolist()[0] == 0 and st["ckpt_steps"].tolist()[-1] == 20
    assert st["ckpt_weight"].shape[1:] == st["weight"].shape
    torch.testing.assert_close(st["ckpt_weight"][0], st["init_weight"])
    torch.testing.assert_close(st["ckpt_weight"][-1], st["weight"])
    # every sign-descent step moves each weight by exactly lr (no zero gradients here)
    moved = (st["weight"] - st["init_weight"]).abs()
    assert float(moved.max()) <= 20 * 1e-3 + 1e-6


def test_robust_reference_is_constructed_not_trained():
    data = _data(d=400)  # noise projections far below the bias ||mu|| / 2 = 10
    res = fit(
        {"kind": "robust_reference", "beta": 0.5}, {"kind": "handbuilt"}, data, "binary", seed=0
    )
    assert res.state["kind"] == "robust_reference" and res.metrics["test.binary_acc"] == 1.0
    with pytest.raises(ValueError, match="cluster data"):
        img = _data()
        img.extras.clear()
        fit({"kind": "robust_reference", "beta": 0.5}, {"kind": "handbuilt"}, img, "binary", 0)


def test_unknown_kinds_are_named():
    with pytest.raises(ValueError, match=r"'transformer' is not a model kind \(known: \["):
        kinds.MODELS.load("transformer")
    with pytest.raises(ValueError, match="cannot train a network"):
        net_train_fields({"kind": "steepest", "norm": "l1"})
    with pytest.raises(ValueError, match="max_epochs"):
        NetTrainConfig(max_epochs=0)
