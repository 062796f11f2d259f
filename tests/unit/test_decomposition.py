"""Lambda decomposition, feature-averaging index and cosines (ibrobust.analysis.decomposition, .cosines)."""

from __future__ import annotations

import math

import pytest
import torch

from ibrobust.analysis.cosines import cosine_matrix
from ibrobust.analysis.decomposition import (
    decompose_checkpoints,
    decoupling_ratio,
    feature_averaging_index,
    lambda_decomposition,
    other_class_ratio,
)
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.readout import readout_for
from ibrobust.models.two_layer import TwoLayerConfig, init_two_layer
from ibrobust.seeding import torch_generator
from ibrobust.training.full_batch import GDConfig, train_gd

torch.set_num_threads(1)


def cluster_problem(d=60, k=4, n=20, seed=0):
    data = make_cluster_data(ClusterDataConfig(d=d, k=k, n_train=n, n_test=1), seed)
    return data.means, data.train.noise, data.train.fine, data.train.x


# ---------------------------------------------------------------------------- planted


def test_features_plus_noise_recovers_planted_coefficients():
    means, noise, fine, _ = cluster_problem()
    g = torch_generator(0, "test", "planted")
    lam = torch.randn(7, 4, generator=g)
    s = 0.3 * torch.randn(7, 20, generator=g)
    dw = (lam.double() @ means.double() + s.double() @ noise.double()).float()
    dec = lambda_decomposition(dw, means, noise, fine, basis="features+noise")
    assert dec.basis == "features+noise"
    assert dec.lam.shape == (7, 4) and dec.s.shape == (7, 20) and dec.residual.shape == (7,)
    torch.testing.assert_close(dec.lam, lam, rtol=0, atol=1e-4)
    torch.testing.assert_close(dec.s, s, rtol=0, atol=1e-4)
    assert (dec.residual < 1e-5).all()
    # "auto" picks the same basis when k + n <= d
    auto = lambda_decomposition(dw, means, noise, fine)
    assert auto.basis == "features+noise"
    torch.testing.assert_close(auto.lam, dec.lam)


def test_inputs_basis_recovers_cluster_sums_of_alpha():
    means, noise, fine, x = cluster_problem(d=30, k=4, n=24, seed=1)
    g = torch_generator(1, "test", "alpha")
    alpha = torch.randn(5, 24, generator=g)
    dw = (alpha.double() @ x.double()).float()
    dec = lambda_decomposition(dw, means, noise, fine, basis="inputs")
    assert dec.basis == "inputs"
    expected_lam = torch.zeros(5, 4)
    for i in range(24):
        expected_lam[:, fine[i]] += alpha[:, i]
    torch.testing.assert_close(dec.lam, expected_lam, rtol=0, atol=1e-4)
    torch.testing.assert_close(dec.s, alpha, rtol=0, atol=1e-4)
    assert (dec.residual < 1e-5).all()


def test_auto_uses_inputs_when_k_plus_n_exceeds_d():
    means, noise, fine, x = cluster_problem(d=22, k=4, n=20, seed=2)  # k + n = 24 > 22 >= n
    alpha = torch.randn(3, 20, generator=torch_generator(2, "test", "auto"))
    dec = lambda_decomposition((alpha.double() @ x.double()).float(), means, noise, fine)
    assert dec.basis == "inputs"
    torch.testing.assert_close(dec.s, alpha, rtol=0, atol=1e-3)


def test_residual_one_for_vector_orthogonal_to_span():
    means, noise, fine, _ = cluster_problem()
    cols = torch.cat([means, noise]).double()  # (k + n, d)
    v = torch.randn(3, 60, generator=torch_generator(3, "test", "orth"), dtype=torch.float64)
    q, _ = torch.linalg.qr(cols.T)
    v_perp = v - (v @ q) @ q.T
    dec = lambda_decomposition(v_perp.float(), means, noise, fine, basis="features+noise")
    torch.testing.assert_close(dec.residual, torch.ones(3), rtol=0, atol=1e-4)
    assert dec.lam.abs().max() < 1e-4 and dec.s.abs().max() < 1e-4
    # half in, half out: residual = ||perp|| / ||total||
    inside = (v @ q) @ q.T
    mix = inside / inside.norm(dim=1, keepdim=True) + v_perp / v_perp.norm(dim=1, keepdim=True)
    dec = lambda_decomposition(mix.float(), means, noise, fine, basis="features+noise")
    torch.testing.assert_close(dec.residual, torch.full((3,), 1 / math.sqrt(2)), rtol=0, atol=1e-4)


def test_impossible_bases_raise():
    means, noise, fine, _ = cluster_problem(d=22, k=4, n=20)
    dw = torch.zeros(2, 22)
    with pytest.raises(ValueError, match="features\\+noise"):
        lambda_decomposition(dw, means, noise, fine, basis="features+noise")
    means, noise, fine, _ = cluster_problem(d=10, k=4, n=12)
    with pytest.raises(ValueError, match="inputs"):
        lambda_decomposition(torch.zeros(2, 10), means, noise, fine, basis="inputs")
    with pytest.raises(ValueError, match="basis"):
        lambda_decomposition(torch.zeros(2, 10), means, noise, fine, basis="foo")


def test_zero_displacement_has_zero_residual():
    means, noise, fine, _ = cluster_problem()
    dec = lambda_decomposition(torch.zeros(2, 60), means, noise, fine)
    assert torch.equal(dec.residual, torch.zeros(2))


# ---------------------------------------------------------------------------- index, cosines


def test_feature_averaging_index_hand_cases():
    lam = torch.tensor(
        [
            [2.0, 2.0, 5.0, 0.0],  # same class {0, 1}: equal -> 1
            [3.0, 0.0, 0.0, 9.0],  # one-hot on the own class -> 0
            [1.0, 4.0, 0.0, 0.0],  # 1/4
            [-1.0, 0.0, 3.0, 3.0],  # largest own coefficient 0 -> nan
            [-2.0, -1.0, 0.0, 0.0],  # negative -> nan
            [3.0, -1.0, 0.0, 0.0],  # second negative -> clamped to 0
            [0.0, 0.0, 1.0, 3.0],  # other class {2, 3}: 1/3
        ]
    )
    same = torch.tensor([[True, True, False, False]] * 6 + [[False, False, True, True]])
    idx = feature_averaging_index(lam, same)
    torch.testing.assert_close(idx[[0, 1, 2, 5, 6]], torch.tensor([1.0, 0.0, 0.25, 0.0, 1 / 3]))
    assert torch.isnan(idx[3]) and torch.isnan(idx[4])


def test_other_class_ratio_hand_cases():
    """max |other-class lambda| / mean same-class lambda, per neuron (hand-computed)."""
    same = torch.tensor([[True, True, False, False], [False, False, True, True],
                         [True, True, False, False]])  # fmt: skip
    lam = torch.tensor(
        [
            [2.0, 4.0, 0.3, -0.6],  # own mean 3, other max |.| 0.6 -> 0.2
            [-1.0, 0.5, 1.0, 1.0],  # own mean 1, other max |.| 1.0 -> 1.0
            [-1.0, 0.5, 5.0, 0.0],
        ]
    )  # own mean -0.25: learned nothing -> NaN
    r = other_class_ratio(lam, same)
    assert r[0].item() == pytest.approx(0.2) and r[1].item() == pytest.approx(1.0)
    assert math.isnan(r[2].item())


def test_decoupling_ratio_hand_cases():
    """max_{j != i} |lambda_j| / lambda_i per neuron, i its own feature (hand-computed)."""
    lam = torch.tensor(
        [
            [4.0, 1.0, -2.0],  # own 0: cross max |.| 2 -> 0.5
            [0.3, 3.0, 0.6],  # own 1: 0.6 / 3 -> 0.2
            [9.0, 9.0, -1.0],  # own 2 not positive: learned nothing -> NaN
            [0.0, -0.5, 2.0],  # own 2: 0.5 / 2 -> 0.25
        ]
    )
    r = decoupling_ratio(lam, torch.tensor([0, 1, 2, 2]))
    torch.testing.assert_close(r[[0, 1, 3]], torch.tensor([0.5, 0.2, 0.25]))
    assert math.isnan(r[2].item())


def _planted_state(lam: torch.Tensor, data, heads: int, readout: torch.Tensor) -> dict:
    """A two-layer state whose one checkpoint after 0 is w(0) + lam @ means (no noise part)."""
    n_neurons, d = lam.shape[0], data.means.shape[1]
    w0 = torch.randn(heads, n_neurons // heads, d, generator=torch_generator(3, "test", "w0"))
    wt = w0 + (lam @ data.means).reshape(w0.shape)
    return {"weight": wt, "readout": readout, "init_weight": w0,
            "ckpt_steps": torch.tensor([0, 10]), "ckpt_weight": torch.stack([w0, wt])}  # fmt: skip


@pytest.mark.parametrize("supervision", ["binary", "multiclass"])
def test_decompose_checkpoints_records_the_decoupling_ratio_of_k_class_nets(supervision):
    """k = 4 clusters (k + n = 14 <= d = 40: unique coefficients), one neuron per head of a
    k-class net with planted lambdas: ratios 0.5, 0.2, 0.25, 0.2 -> mean 1.15 / 4; a 2-class
    net (two neurons per head) has no own feature per head: NaN."""
    from ibrobust.data.dataset import dataset_from_arrays

    cd = make_cluster_data(ClusterDataConfig(d=40, k=4, n_train=10, n_test=2), 1)
    data = dataset_from_arrays(cd.arrays())
    lam = torch.tensor([[4.0, 1.0, -2.0, 0.0], [0.3, 3.0, 0.6, 0.0], [0.0, -0.5, 2.0, 0.1],
                        [1.0, 1.0, 1.0, 5.0]])  # fmt: skip
    heads, readout = (
        (4, data.sign) if supervision == "multiclass" else (2, torch.tensor([1.0, -1.0]))
    )
    state = _planted_state(lam, data, heads, readout)
    rows, traj = decompose_checkpoints(state, data, supervision)
    assert [t["step"] for t in traj] == [10] and traj[0]["residual_max"] < 1e-4
    got = traj[0]["decoupling_ratio_mean"]
    if supervision == "multiclass":
        assert got == pytest.approx(1.15 / 4, rel=1e-4)
    else:
        assert math.isnan(got)


def test_decompose_checkpoints_rejects_a_k_class_net_without_a_head_per_cluster():
    from ibrobust.data.dataset import dataset_from_arrays

    cd = make_cluster_data(ClusterDataConfig(d=40, k=4, n_train=10, n_test=2), 1)
    data = dataset_from_arrays(cd.arrays())
    state = _planted_state(torch.ones(2, 4), data, 2, torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="one head per cluster, got 2 heads, k=4"):
        decompose_checkpoints(state, data, "multiclass")
    with pytest.raises(ValueError, match="supervision must be"):
        decompose_checkpoints(state, data, "fine")


def test_cosine_matrix_hand_case():
    w = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, -2.0], [0.0, 0.0, 0.0]])
    f = torch.tensor([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 1.0]])
    r = 1 / math.sqrt(2)
    expected = torch.tensor([[1.0, 0.0, 0.0], [r, r, 0.0], [0.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    torch.testing.assert_close(cosine_matrix(w, f), expected)


# ---------------------------------------------------------------------------- trained net


@pytest.mark.parametrize("supervision", ["binary", "multiclass"])
def test_gd_trained_net_lies_in_feature_noise_span(supervision):
    d, k, n = 80, 4, 30
    data = make_cluster_data(ClusterDataConfig(d=d, k=k, n_train=n, n_test=1), 5)
    heads = 2 if supervision == "binary" else k
    w0, b0 = init_two_layer(d, heads, TwoLayerConfig(m=5), 5)
    tr = data.train
    res = train_gd(
        tr.x,
        tr.y,
        tr.fine,
        w0,
        b0,
        readout_for(supervision, data.sign),
        supervision,
        GDConfig(lr=0.5, max_steps=200, stop_loss=0.0),
    )
    dw = (res.weight - w0).reshape(-1, d)
    moved = dw.norm(dim=1) > 1e-3
    assert moved.sum() >= dw.shape[0] // 2
    dec = lambda_decomposition(dw, data.means, tr.noise, tr.fine)
    assert dec.basis == "features+noise"
    assert (dec.residual[moved] < 1e-3).all()
    # and a random displacement of the same size is far from the span (k + n = 34 of 80 dims)
    rnd = torch.randn(dw.shape, generator=torch_generator(5, "test", "rnd"))
    assert (lambda_decomposition(rnd, data.means, tr.noise, tr.fine).residual > 0.5).all()
    # both bases agree on lambda (columns independent, the inputs span a subspace of the other)
    dec_in = lambda_decomposition(dw, data.means, tr.noise, tr.fine, basis="inputs")
    scale = dec.lam.abs().max().item()
    torch.testing.assert_close(dec_in.lam, dec.lam, rtol=0, atol=1e-3 * scale)
