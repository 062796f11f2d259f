"""Image models, the model registry, the dataset file form and the generic cosine analysis."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ibrobust.analysis.cosines import class_mean_embeddings, cosine_matrix, neuron_cosines
from ibrobust.data.dataset import Dataset, Split, dataset_from_arrays
from ibrobust.models.image import ImageModelConfig
from ibrobust.models.registry import BuildContext, build_model, load_model, model_state
from ibrobust.models.two_layer import TwoLayerFixed

torch.set_num_threads(1)
READOUT2 = torch.tensor([1.0, -1.0])
SIGN10 = torch.tensor([1.0] * 5 + [-1.0] * 5)


@pytest.mark.parametrize(
    ("spec", "shape", "feats"),
    [
        ({"kind": "mlp", "hidden": [7, 5]}, (1, 6, 6), 5),
        ({"kind": "mlp", "hidden": [9]}, (12,), 9),
        ({"kind": "cnn", "channels": [3, 4], "kernel": 3, "hidden": [6]}, (3, 8, 8), 6),
        ({"kind": "resnet18", "width": 4}, (3, 8, 8), 32),
    ],
)
def test_shapes_readout_and_save_load(spec, shape, feats):
    x = torch.rand(5, *shape)
    for readout in (READOUT2, SIGN10):
        ctx = BuildContext(shape, readout, seed=1, train_x=torch.rand(4, *shape))
        net = build_model(spec, ctx).eval()
        z = net(x)
        assert z.shape == (5, readout.numel())
        torch.testing.assert_close(net.binary_score(x), z @ readout)
        assert net.embed(x).shape == (5, feats) and net.neurons().shape == (readout.numel(), feats)
        assert net.neuron_heads().tolist() == list(range(readout.numel()))
        back = load_model(model_state(net, spec, ctx))
        torch.testing.assert_close(back(x), z)


def test_init_is_seeded():
    def weights(seed):
        ctx = BuildContext((1, 8, 8), READOUT2, seed)
        return torch.cat(
            [p.flatten() for p in build_model({"kind": "cnn", "channels": [2]}, ctx).parameters()]
        )

    assert torch.equal(weights(0), weights(0)) and not torch.equal(weights(0), weights(1))


def test_center_normalisation_subtracts_the_mean_training_image():
    train = torch.rand(10, 1, 4, 4)
    ctx = BuildContext((1, 4, 4), READOUT2, 0, train)
    net = build_model({"kind": "mlp", "hidden": [3], "normalize": "center"}, ctx)
    torch.testing.assert_close(net.mean, train.mean(0))
    zero_in = net.body(torch.zeros(1, 1, 4, 4))
    torch.testing.assert_close(net.embed(train.mean(0, keepdim=True)), zero_in)
    std = build_model({"kind": "cnn", "channels": [2], "normalize": "standardize"}, ctx)
    assert std.mean.shape == (1, 1, 1) and float(std.std) == pytest.approx(
        float(train.std()), rel=1e-5
    )


def test_channels_last_cnn_is_the_same_function_in_nhwc():
    """Same seed, same weights and (float rounding aside) the same logits and input gradients;
    only the memory layout differs, and it survives a save/load."""
    spec = {"kind": "cnn", "channels": [4, 8], "kernel": 5, "hidden": [16]}
    ctx = BuildContext((1, 28, 28), SIGN10, seed=3)
    plain = build_model(spec, ctx).eval()
    nhwc = build_model({**spec, "channels_last": True}, ctx).eval()
    conv = nhwc.body[3]  # the second conv (with one input channel both layouts coincide)
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert not plain.body[3].weight.is_contiguous(memory_format=torch.channels_last)
    for a, b in zip(plain.parameters(), nhwc.parameters(), strict=True):
        assert torch.equal(a, b)  # equal values, whatever the layout
    x = torch.rand(6, 1, 28, 28)

    def logits_and_grad(net):
        xg = x.clone().requires_grad_(True)
        z = net(xg)
        (g,) = torch.autograd.grad(z.logsumexp(1).sum(), xg)
        return z, g

    (z0, g0), (z1, g1) = logits_and_grad(plain), logits_and_grad(nhwc)
    torch.testing.assert_close(z1, z0, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(g1, g0, rtol=1e-4, atol=1e-7)
    back = load_model(model_state(nhwc, {**spec, "channels_last": True}, ctx))
    assert back.channels_last and back.body[3].weight.is_contiguous(
        memory_format=torch.channels_last
    )
    torch.testing.assert_close(back(x), z1)


def relu_then_pool(net, x):
    """The textbook conv-ReLU-pool order on the net's own layers (the reference the pooled-
    first body must equal bit for bit)."""
    z = (x - net.mean) / net.std
    if net.channels_last:
        z = z.contiguous(memory_format=torch.channels_last)
    convs = [m for m in net.body if isinstance(m, torch.nn.Conv2d)]
    for conv in convs:
        z = torch.nn.functional.max_pool2d(torch.relu(conv(z)), 2)
    return net.head(net.body[len(convs) * 3 :](z))


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cnn_pools_before_its_relu_and_is_the_conv_relu_pool_net_bit_for_bit(dtype, channels_last):
    """max and ReLU commute exactly, and the gradient reaches the same entry: logits, input
    gradient and every parameter gradient equal the conv-ReLU-pool order's to the bit (about
    half the conv outputs are negative, so the ReLU's zeros and the pool's ties are hit)."""
    ctx = BuildContext((3, 16, 16), SIGN10, seed=5)
    spec = {"kind": "cnn", "channels": [4, 6], "kernel": 3, "hidden": [8]}
    net = build_model({**spec, "channels_last": channels_last}, ctx)
    net = net.to(dtype)
    assert [type(m).__name__ for m in net.body[:3]] == ["Conv2d", "MaxPool2d", "ReLU"]
    x = torch.rand(5, 3, 16, 16, generator=torch.Generator().manual_seed(0), dtype=dtype)

    def value_and_grads(forward):
        xg = x.clone().requires_grad_(True)
        z = forward(xg)
        grads = torch.autograd.grad(z.logsumexp(1).sum(), [xg, *net.parameters()])
        return [z, *grads]

    ours, ref = value_and_grads(net), value_and_grads(lambda v: relu_then_pool(net, v))
    assert len(ours) == len(ref) == 2 + len(list(net.parameters()))
    for a, b in zip(ours, ref, strict=True):
        assert torch.equal(a, b)
    pre = net.body[0](x)  # the test bites: the first conv has negative outputs to clip
    assert 0.2 < float((pre < 0).double().mean()) < 0.8


def test_bad_settings_name_the_key():
    with pytest.raises(ValueError, match="cnn needs image inputs"):
        build_model({"kind": "cnn"}, BuildContext((20,), READOUT2, 0))
    with pytest.raises(ValueError, match="kernel"):
        ImageModelConfig(kind="cnn", kernel=4)
    with pytest.raises(ValueError, match="normalize"):
        ImageModelConfig(kind="mlp", normalize="whiten")
    with pytest.raises(ValueError, match="channels_last is not a setting of model kind 'mlp'"):
        ImageModelConfig(kind="mlp", channels_last=True)
    with pytest.raises(ValueError, match="pooling stages"):
        build_model({"kind": "cnn", "channels": [2, 2, 2, 2]}, BuildContext((1, 8, 8), READOUT2, 0))


def test_dataset_from_arrays_images_and_errors():
    arrays = {
        "train_x": np.full((3, 1, 2, 2), 255, np.uint8),
        "train_y": np.array([1.0, -1.0, 1.0], np.float32),
        "train_fine": np.array([0, 1, 0]),
        "test_x": np.zeros((2, 1, 2, 2), np.uint8),
        "test_y": np.array([1.0, -1.0], np.float32),
        "test_fine": np.array([0, 1]),
        "sign": np.array([1.0, -1.0], np.float32),
        "class_names": np.array(["a", "b"]),
    }
    ds = dataset_from_arrays(arrays)
    assert ds.box == (0.0, 1.0) and float(ds.train.x.max()) == 1.0 and ds.input_shape == (1, 2, 2)
    assert ds.means is None and "class_names" not in ds.extras and ds.k == 2
    with pytest.raises(
        ValueError, match=r"bad\.npz: not a dataset file, missing arrays \['sign'\]"
    ):
        dataset_from_arrays({k: v for k, v in arrays.items() if k != "sign"}, "bad.npz")
    with pytest.raises(ValueError, match="disagree in length"):
        dataset_from_arrays({**arrays, "test_y": np.ones(3, np.float32)})


class _Identity(torch.nn.Module):
    def forward(self, x):
        return x


def test_class_mean_embeddings_by_hand():
    net = torch.nn.Module()
    net.embed = _Identity()
    x = torch.tensor([[1.0, 0.0], [3.0, 2.0], [0.0, 5.0]])
    fine = torch.tensor([0, 0, 1])
    out = class_mean_embeddings(net, x, fine, 2, batch=2)
    torch.testing.assert_close(out, torch.tensor([[2.0, 1.0], [0.0, 5.0]]))
    with pytest.raises(ValueError, match="every class"):
        class_mean_embeddings(net, x, fine, 3)


def _planted(neurons: torch.Tensor, readout: torch.Tensor, heads: int) -> TwoLayerFixed:
    n, d = neurons.shape
    return TwoLayerFixed(
        neurons.reshape(heads, n // heads, d), torch.zeros(heads, n // heads), readout
    )


def test_neuron_cosines_averaging_vs_decoupled():
    k, d = 4, 6
    means = torch.eye(d)[:k] * 3.0  # orthogonal, norm 3
    sign = torch.tensor([1.0, 1.0, -1.0, -1.0])
    data = Dataset(
        Split(torch.zeros(4, d), sign.clone(), torch.arange(4)),
        Split(torch.zeros(1, d), torch.ones(1), torch.zeros(1, dtype=torch.long)),
        sign,
        extras={"means": means},
    )
    # 2-class net whose neurons are the class averages: cosine 1/sqrt(2) with own features
    avg = torch.stack([means[:2].sum(0), means[2:].sum(0)])
    table, summ = neuron_cosines(_planted(avg, READOUT2, 2), data)
    assert summ["features"] == "cluster means"
    assert summ["cosine_same_class_mean"] == pytest.approx(1 / math.sqrt(2))
    assert summ["single_feature_fraction"] == 0.0 and summ[
        "cosine_own_class_average_mean"
    ] == pytest.approx(1.0)
    assert len(table) == 2 * k and set(table.columns) >= {"neuron", "head", "feature", "cosine"}
    # k-class net with one neuron on each mean: decoupled
    _, summ = neuron_cosines(_planted(means.clone(), sign, k), data)
    assert summ["single_feature_fraction"] == 1.0
    assert summ["cosine_max_per_neuron_mean"] == pytest.approx(1.0)
    torch.testing.assert_close(cosine_matrix(means, means), torch.eye(k))
