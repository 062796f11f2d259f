"""Two-layer ReLU net with a fixed second layer (ibrobust.models.two_layer)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ibrobust.io import load_torch, save_torch
from ibrobust.models.readout import readout_for
from ibrobust.models.two_layer import (
    TwoLayerConfig,
    TwoLayerFixed,
    from_state,
    init_two_layer,
    to_state,
)
from ibrobust.seeding import torch_generator
from ibrobust.training.losses import logistic_margin_loss

torch.set_num_threads(1)

# d=2, H=2, m=2 hand example
W = torch.tensor([[[1.0, 2.0], [-1.0, 0.5]], [[0.0, -1.0], [2.0, 1.0]]])
B = torch.tensor([[0.5, -1.0], [0.0, -3.0]])
X = torch.tensor([[1.0, 1.0], [-2.0, 1.0], [0.0, -2.0]])
# pre-activations per (x, head, neuron):
#   x1: head0 (3.5, -1.5)  head1 (-1, 0)    -> heads (1.75, 0)
#   x2: head0 (0.5, 1.5)   head1 (-1, -6)   -> heads (1.0, 0)
#   x3: head0 (-3.5, -2)   head1 (2, -5)    -> heads (0, 1.0)
HEADS = torch.tensor([[1.75, 0.0], [1.0, 0.0], [0.0, 1.0]])


def test_forward_hand_computed():
    net = TwoLayerFixed(W, B, torch.tensor([1.0, -1.0]))
    assert net.heads == 2
    torch.testing.assert_close(net(X), HEADS, rtol=0, atol=1e-7)
    torch.testing.assert_close(
        net.binary_score(X), torch.tensor([1.75, 1.0, -1.0]), rtol=0, atol=1e-7
    )


def test_binary_score_is_heads_times_readout():
    g = torch_generator(0, "test", "score")
    w, b = torch.randn(4, 3, 5, generator=g), torch.randn(4, 3, generator=g)
    readout = torch.tensor([1.0, -1.0, -1.0, 1.0])
    net = TwoLayerFixed(w, b, readout)
    x = torch.randn(7, 5, generator=g)
    heads = net(x)
    assert heads.shape == (7, 4)
    torch.testing.assert_close(net.binary_score(x), heads @ readout)
    # explicit F = sum_{J+} f_i - sum_{J-} f_i
    torch.testing.assert_close(
        net.binary_score(x), heads[:, 0] + heads[:, 3] - heads[:, 1] - heads[:, 2]
    )


def test_module_copies_its_inputs():
    w, b = W.clone(), B.clone()
    net = TwoLayerFixed(w, b, torch.tensor([1.0, -1.0]))
    with torch.no_grad():
        net.weight.zero_()
    assert torch.equal(w, W)


def test_readout_for():
    sign = torch.tensor([1.0, 1.0, -1.0, -1.0])
    assert readout_for("binary", sign).tolist() == [1.0, -1.0]
    r = readout_for("multiclass", sign.to(torch.int64))
    assert r.dtype == torch.float32 and r.tolist() == [1.0, 1.0, -1.0, -1.0]
    assert r.data_ptr() != sign.data_ptr()
    with pytest.raises(ValueError, match="supervision"):
        readout_for("regression", sign)


def test_shape_validation():
    with pytest.raises(ValueError):
        TwoLayerFixed(W[0], B, torch.tensor([1.0, -1.0]))  # weight not 3-d
    with pytest.raises(ValueError):
        TwoLayerFixed(W, B[:, :1], torch.tensor([1.0, -1.0]))  # bias shape
    with pytest.raises(ValueError):
        TwoLayerFixed(W, B, torch.tensor([1.0, -1.0, 1.0]))  # readout length


def test_config_validation():
    with pytest.raises(ValueError, match="m"):
        TwoLayerConfig(m=0)
    with pytest.raises(ValueError, match="init_scale"):
        TwoLayerConfig(init_scale=-1.0)


def _random_net(h=2, m=3, d=4, seed=0, dtype=torch.float64):
    g = torch_generator(seed, "test", "net")
    w = torch.randn(h, m, d, generator=g, dtype=dtype)
    b = torch.randn(h, m, generator=g, dtype=dtype)
    return w, b


def test_logistic_gradient_matches_hand_formula():
    h, m, d, n = 2, 3, 4, 6
    w, b = _random_net(h, m, d)
    g = torch_generator(1, "test", "data")
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    readout = torch.tensor([1.0, -1.0], dtype=torch.float64)
    net = TwoLayerFixed(w, b, readout)
    loss = logistic_margin_loss(net(x), net.readout, y)
    gw, gb = torch.autograd.grad(loss, [net.weight, net.bias])

    # by hand: dL/dw_{h,r} = mean_i l'(y_i f_i) y_i readout_h (1/m) 1[z_ihr > 0] x_i,
    # l(u) = log(1 + e^-u), l'(u) = -1 / (1 + e^u)
    wn, bn, xn, yn, rn = (t.numpy() for t in (w, b, x, y, readout))
    z = np.einsum("nd,hmd->nhm", xn, wn) + bn[None]
    assert np.abs(z).min() > 1e-6  # no kinks hit
    f = (np.maximum(z, 0).mean(-1) * rn).sum(-1)
    lprime = -1.0 / (1.0 + np.exp(yn * f))
    hand_w = np.zeros_like(wn)
    hand_b = np.zeros_like(bn)
    for i in range(n):
        for hh in range(h):
            for r in range(m):
                c = lprime[i] * yn[i] * rn[hh] / m * float(z[i, hh, r] > 0) / n
                hand_w[hh, r] += c * xn[i]
                hand_b[hh, r] += c
    np.testing.assert_allclose(gw.numpy(), hand_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), hand_b, rtol=1e-10, atol=1e-12)
    assert np.abs(hand_w).max() > 1e-3  # not trivially zero


def test_gradcheck_float64():
    w, b = _random_net(2, 3, 4, seed=5)
    g = torch_generator(2, "test", "gradcheck")
    x = torch.randn(5, 4, generator=g, dtype=torch.float64)
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0], dtype=torch.float64)
    readout = torch.tensor([1.0, -1.0], dtype=torch.float64)

    net = TwoLayerFixed(w, b, readout)

    def fn(weight, bias, inputs):
        params = {"weight": weight, "bias": bias}
        heads = torch.func.functional_call(net, params, (inputs,))
        return logistic_margin_loss(heads, net.readout, y), heads @ net.readout

    args = (w.requires_grad_(True), b.requires_grad_(True), x.requires_grad_(True))
    assert torch.autograd.gradcheck(fn, args, eps=1e-7, atol=1e-6)


def test_init_statistics_large_d():
    d, heads = 1000, 2
    w, b = init_two_layer(d, heads, TwoLayerConfig(m=1000), seed=0)
    assert w.shape == (heads, 1000, d) and b.shape == (heads, 1000)
    assert w.std().item() == pytest.approx(1 / d**0.5, rel=0.01)
    assert w.mean().item() == pytest.approx(0.0, abs=2e-4)
    assert b.std().item() == pytest.approx(1 / d, rel=0.08)
    # each neuron has norm ~ 1
    assert w.norm(dim=-1).mean().item() == pytest.approx(1.0, rel=0.01)


def test_init_scale_bias_flag_and_determinism():
    d = 50
    w1, b1 = init_two_layer(d, 3, TwoLayerConfig(m=4), seed=3)
    w2, b2 = init_two_layer(d, 3, TwoLayerConfig(m=4), seed=3)
    assert torch.equal(w1, w2) and torch.equal(b1, b2)
    w3, _ = init_two_layer(d, 3, TwoLayerConfig(m=4), seed=4)
    assert not torch.equal(w1, w3)
    w4, _ = init_two_layer(d, 3, TwoLayerConfig(m=4), seed=3, stream="other")
    assert not torch.equal(w1, w4)
    ws, _ = init_two_layer(d, 3, TwoLayerConfig(m=4, init_scale=0.25), seed=3)
    torch.testing.assert_close(ws, 0.25 * w1)
    _, b0 = init_two_layer(d, 3, TwoLayerConfig(m=4, bias=False), seed=3)
    assert torch.equal(b0, torch.zeros(3, 4))


def test_state_roundtrip_through_weights_only_load(tmp_path):
    net = TwoLayerFixed(W, B, torch.tensor([1.0, -1.0]))
    state = to_state(net, kind="two_layer", steps=torch.tensor(3))
    assert set(state) == {"weight", "bias", "readout", "kind", "steps"}
    assert not state["weight"].requires_grad
    save_torch(tmp_path / "m.pt", state)
    back = from_state(load_torch(tmp_path / "m.pt"))
    torch.testing.assert_close(back(X), HEADS, rtol=0, atol=1e-7)
    assert torch.equal(back.readout, net.readout)
    # the state is a copy: training the net afterwards does not change it
    with torch.no_grad():
        net.weight.add_(1.0)
    assert torch.equal(state["weight"], W)
