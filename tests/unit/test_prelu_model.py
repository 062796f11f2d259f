"""pReLU network: hand-computed forward values, homogeneity, gradients vs finite differences."""

import math

import pytest
import torch

from ibrobust.models.prelu import (
    PreluConfig,
    PreluNet,
    build_prelu,
    from_state,
    init_prelu,
    prelu_features,
    prelu_readout,
    to_state,
)

# Two neurons in D = 2: w1 = (3, 4) (||w1|| = 5), w2 = (1, 0) (||w2|| = 1); v = (1, -2).
W2 = torch.tensor([[3.0, 4.0], [1.0, 0.0]], dtype=torch.float64)
V2 = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
X3 = torch.tensor([[1.0, 1.0], [-1.0, 0.5], [0.0, 1.0]], dtype=torch.float64)
# <x, w1> = 7, -1, 4 and <x, w2> = 1, -1, 0, so
#   p = 1: 1*7 - 2*1 = 5;            0;   4
#   p = 2: 7^2/5 - 2*1^2/1 = 7.8;     0;   4^2/5 = 3.2
#   p = 3: 7^3/25 - 2*1 = 11.72;      0;   4^3/25 = 2.56
HAND = {1: [5.0, 0.0, 4.0], 2: [7.8, 0.0, 3.2], 3: [11.72, 0.0, 2.56]}


def net(p, w=W2, v=V2, **kw):
    return PreluNet(w, v, torch.ones(v.shape[0], dtype=w.dtype), p, **kw)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_forward_hand_computed(p):
    out = net(p)(X3)
    assert out.shape == (3, 1)
    torch.testing.assert_close(out[:, 0], torch.tensor(HAND[p], dtype=torch.float64))
    torch.testing.assert_close(net(p).binary_score(X3), torch.tensor(HAND[p], dtype=torch.float64))


@pytest.mark.parametrize("p", [1, 2, 3])
def test_centring_and_normalisation_hand_computed(p):
    # center (1, 0): x = (2, 1) becomes x_c = (1, 1), the first row of X3.
    c = torch.tensor([1.0, 0.0], dtype=torch.float64)
    x = torch.tensor([[2.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(
        net(p, center=c)(x)[0, 0], torch.tensor(HAND[p][0], dtype=torch.float64)
    )
    # normalised: divide by ||x_c||^(p-1) = sqrt(2)^(p-1): 5, 7.8/sqrt 2, 11.72/2
    expect = HAND[p][0] / math.sqrt(2) ** (p - 1)
    out = net(p, center=c, normalize_input=True)(x)[0, 0]
    torch.testing.assert_close(out, torch.tensor(expect, dtype=torch.float64))
    # and the feature function gives the same units
    feats = prelu_features(x, W2, p, center=c, normalize_input=True)  # (1, 2)
    torch.testing.assert_close((feats @ V2.T)[0, 0], torch.tensor(expect, dtype=torch.float64))


def test_p1_is_plain_relu_net():
    g = torch.Generator().manual_seed(0)
    w, v = torch.randn(7, 5, generator=g), torch.randn(3, 7, generator=g)
    x = torch.randn(11, 5, generator=g)
    m = PreluNet(w, v, torch.tensor([1.0, -1.0, 1.0]), 1)
    assert torch.equal(m(x), torch.relu(x @ w.T) @ v.T)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 2.5])
def test_homogeneity(p):
    g = torch.Generator().manual_seed(1)
    w = torch.randn(6, 4, generator=g, dtype=torch.float64)
    v = torch.randn(1, 6, generator=g, dtype=torch.float64)
    x = torch.randn(9, 4, generator=g, dtype=torch.float64)
    c = 2.7
    m = net(p, w, v)
    torch.testing.assert_close(m(c * x), c**p * m(x))  # p-homogeneous in x
    torch.testing.assert_close(net(p, c * w, v)(x), c * m(x))  # degree 1 in W
    # with input normalisation f is 1-homogeneous in x for every p
    mn = net(p, w, v, normalize_input=True)
    torch.testing.assert_close(mn(c * x), c * mn(x))


def _fd_check(fn, tensors, rel_step=1e-6, rtol=1e-6, skip=None):
    """Central differences of scalar fn(*tensors) in every coordinate vs autograd.

    The step is relative to the tensor's scale, so it works at init std 1e-7.
    """
    ts = [t.detach().clone().requires_grad_(True) for t in tensors]
    grads = torch.autograd.grad(fn(*ts), ts)
    for i, (t, gr) in enumerate(zip(tensors, grads, strict=True)):
        assert torch.isfinite(gr).all()
        h = rel_step * float(t.abs().max())
        num = torch.zeros_like(t)
        for k in range(t.numel()):
            if skip is not None and skip(i, k):
                continue
            tp, tm = t.clone(), t.clone()
            tp.view(-1)[k] += h
            tm.view(-1)[k] -= h
            args_p = [tp if j == i else tensors[j] for j in range(len(tensors))]
            args_m = [tm if j == i else tensors[j] for j in range(len(tensors))]
            num.view(-1)[k] = (fn(*args_p) - fn(*args_m)) / (2 * h)
        if skip is not None:
            mask = torch.tensor([not skip(i, k) for k in range(t.numel())]).view(t.shape)
            gr, num = gr[mask], num[mask]
        scale = float(num.abs().max()) + 1e-300
        assert float((gr - num).abs().max()) <= rtol * scale, (i, gr, num)
    return grads


@pytest.mark.parametrize("p", [1, 2, 3, 4])
@pytest.mark.parametrize("std", [1.0, 1e-7])
@pytest.mark.parametrize("normalize", [False, True])
def test_forward_gradients_match_finite_differences(p, std, normalize):
    g = torch.Generator().manual_seed(2)
    d, h, heads = 5, 4, 2
    w = torch.randn(h, d, generator=g, dtype=torch.float64) * std
    v = torch.randn(heads, h, generator=g, dtype=torch.float64) * std
    x = torch.randn(8, d, generator=g, dtype=torch.float64)
    c = torch.randn(d, generator=g, dtype=torch.float64) * 0.1
    probe = torch.randn(8, heads, generator=g, dtype=torch.float64)

    def fn(w_, v_, x_):
        return (_functional(x_, w_, v_, p, c, normalize) * probe).sum()

    _fd_check(fn, [w, v, x])


def _functional(x, w, v, p, c, normalize):
    return prelu_features(x, w, p, center=c, normalize_input=normalize) @ v.T


def test_module_forward_equals_functional_and_trains_through_autograd():
    g = torch.Generator().manual_seed(3)
    w = torch.randn(4, 3, generator=g, dtype=torch.float64)
    v = torch.randn(2, 4, generator=g, dtype=torch.float64)
    x = torch.randn(5, 3, generator=g, dtype=torch.float64)
    m = PreluNet(w, v, torch.tensor([1.0, -1.0]), 3, normalize_input=True)
    torch.testing.assert_close(m(x), _functional(x, w, v, 3, None, True))
    m(x).sum().backward()
    assert m.weight.grad is not None and torch.isfinite(m.weight.grad).all()


@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_zero_neuron_no_nan_and_zero_gradient(p):
    g = torch.Generator().manual_seed(4)
    w = torch.randn(4, 5, generator=g, dtype=torch.float64) * 1e-7
    w[1] = 0.0  # neuron 1 is exactly zero
    v = torch.randn(1, 4, generator=g, dtype=torch.float64) * 1e-7
    x = torch.randn(6, 5, generator=g, dtype=torch.float64)

    def fn(w_, v_):
        return (prelu_features(x, w_, p) @ v_.T).sum()

    # finite differences of every other coordinate; neuron 1's own w-gradient is the
    # ReLU'(0) = 0 convention (phi_1 is 1-homogeneous in w_1, not differentiable at 0)
    grads = _fd_check(fn, [w, v], skip=lambda i, k: i == 0 and k // 5 == 1)
    assert torch.equal(grads[0][1], torch.zeros(5, dtype=torch.float64))
    assert float(grads[1][0, 1]) == 0.0  # its unit is 0, so dL/dv_1 = 0
    assert torch.isfinite(PreluNet(w, v, torch.ones(1, dtype=w.dtype), p)(x)).all()


@pytest.mark.parametrize("p", [1, 3, 4])
def test_tiny_init_float32_matches_float64(p):
    g = torch.Generator().manual_seed(5)
    w = torch.randn(50, 1000, generator=g, dtype=torch.float64) * 1e-7
    v = torch.randn(1, 50, generator=g, dtype=torch.float64) * 1e-7
    x = torch.randn(20, 1000, generator=g, dtype=torch.float64) / math.sqrt(1000)
    with torch.no_grad():
        ref = net(p, w, v)(x)
        out32 = net(p, w.float(), v.float())(x.float())
    assert torch.isfinite(out32).all() and float(ref.abs().max()) > 0
    torch.testing.assert_close(out32.double(), ref, rtol=1e-4, atol=1e-6 * float(ref.abs().max()))


def test_init_and_state_roundtrip():
    cfg = PreluConfig(width=8, p=3)
    a, b = init_prelu(6, 1, cfg, seed=0), init_prelu(6, 1, cfg, seed=0)
    assert torch.equal(a.weight, b.weight) and a.weight.shape == (8, 6)
    assert a.out_weight.shape == (1, 8) and a.out_bias is None
    assert float(a.weight.std()) < 1e-6  # the paper's 1e-7 init
    k = init_prelu(784, 10, PreluConfig(width=500, init="kaiming", out_bias=True), seed=1)
    bound = math.sqrt(6 / 500)  # the official kaiming_uniform_ on a (D, h) tensor: fan_in = h
    assert float(k.weight.abs().max()) <= bound and float(k.weight.abs().max()) > 0.9 * bound
    assert float(k.out_bias.abs().max()) <= 1 / math.sqrt(500)
    m = build_prelu(
        k,
        prelu_readout("multiclass", torch.tensor([1.0, -1.0] * 5)),
        PreluConfig(p=2, normalize_input=True),
    )
    m2 = from_state(to_state(m))
    x = torch.rand(3, 784)
    torch.testing.assert_close(m(x), m2(x))
    assert m2.p == 2 and m2.normalize_input


def test_bad_inputs_name_the_value():
    with pytest.raises(ValueError, match="p must"):
        PreluConfig(p=0.5)
    with pytest.raises(ValueError, match="init must"):
        PreluConfig(init="xavier")
    with pytest.raises(ValueError, match="readout"):
        PreluNet(W2, V2, torch.ones(2), 1)
    with pytest.raises(ValueError, match="supervision"):
        prelu_readout("regression")
