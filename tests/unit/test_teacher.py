"""Linear-teacher data: sparsity, label rule, determinism, nesting, batching."""

from __future__ import annotations

import pytest
import torch

from ibrobust.data.teacher import TeacherConfig, make_teacher_batch, make_teacher_data


@pytest.mark.parametrize("entries", ["pm1", "gaussian"])
@pytest.mark.parametrize(("k_w", "k_x"), [(128, 128), (4, 128), (128, 4), (4, 4)])
def test_sparsity_and_label_rule(entries, k_w, k_x):
    cfg = TeacherConfig(d=128, k_w=k_w, k_x=k_x, entries=entries, n_train=256, n_test=2000)
    data = make_teacher_data(cfg, seed=1)
    assert int((data.w_star != 0).sum()) == k_w  # exact support size
    for x, y in ((data.x_train, data.y_train), (data.x_test, data.y_test)):
        s = x @ data.w_star
        assert bool((s != 0).all())  # <w*, x> = 0 was resampled
        torch.testing.assert_close(y, torch.sign(s))
        if entries == "pm1":
            assert set(torch.unique(x).tolist()) <= {-1.0, 0.0, 1.0}
            assert set(torch.unique(data.w_star).tolist()) <= {-1.0, 0.0, 1.0}
    if k_x == cfg.d:
        assert bool((data.x_test != 0).all())
    elif k_w == cfg.d:
        # dense teacher: a Bernoulli(k_x/d) mask conditioned on <w*, x> != 0 (roughly: x != 0)
        nnz = (data.x_test != 0).sum(1).double()
        assert 3.5 < float(nnz.mean()) < 6.0
    assert data.x_train.dtype == torch.float64 and data.x_train.shape == (256, 128)


def test_off_support_density_matches_k_x():
    cfg = TeacherConfig(d=256, k_w=4, k_x=16, entries="gaussian", n_train=8, n_test=4000)
    data = make_teacher_data(cfg, seed=0)
    off = data.w_star == 0
    density = float((data.x_test[:, off] != 0).double().mean())
    assert abs(density - 16 / 256) < 0.005  # off the support nothing is conditioned


def test_deterministic_per_seed_and_draw():
    cfg = TeacherConfig(d=64, k_w=8, k_x=64, n_train=32, n_test=100)
    a, b = make_teacher_data(cfg, 3, draw=0), make_teacher_data(cfg, 3, draw=0)
    for f in ("w_star", "x_train", "y_train", "x_test", "y_test"):
        assert torch.equal(getattr(a, f), getattr(b, f))
    c = make_teacher_data(cfg, 3, draw=1)  # another draw: same teacher and test set
    assert torch.equal(a.w_star, c.w_star) and torch.equal(a.x_test, c.x_test)
    assert not torch.equal(a.x_train, c.x_train)
    d = make_teacher_data(cfg, 4, draw=0)  # another seed: another teacher
    assert not torch.equal(a.w_star, d.w_star)


def test_training_sets_are_nested_in_n():
    small = make_teacher_data(TeacherConfig(d=64, k_w=4, k_x=4, n_train=16, n_test=10), 0, draw=2)
    big = make_teacher_data(TeacherConfig(d=64, k_w=4, k_x=4, n_train=200, n_test=10), 0, draw=2)
    assert torch.equal(small.x_train, big.x_train[:16])
    assert torch.equal(small.y_train, big.y_train[:16])


def test_batch_rows_equal_single_draws():
    cfg = TeacherConfig(d=32, k_w=32, k_x=8, entries="gaussian", n_train=20, n_test=50)
    batch = make_teacher_batch(cfg, 7, draws=[0, 5, 2])
    assert batch.x_train.shape == (3, 20, 32) and batch.y_train.shape == (3, 20)
    for b, r in enumerate([0, 5, 2]):
        single = make_teacher_data(cfg, 7, draw=r)
        assert torch.equal(batch.x_train[b], single.x_train)
        assert torch.equal(batch.y_train[b], single.y_train)
        assert torch.equal(batch.x_test, single.x_test)


def test_bernoulli_teacher_support_is_never_empty():
    cfg = TeacherConfig(d=64, k_w=1, k_x=64, w_support="bernoulli", n_train=8, n_test=8)
    sizes = [int((make_teacher_data(cfg, s).w_star != 0).sum()) for s in range(20)]
    assert min(sizes) >= 1 and len(set(sizes)) > 1


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        (dict(d=0), "d"),
        (dict(k_w=0), "k_w"),
        (dict(k_x=600), "k_x"),
        (dict(entries="uniform"), "entries"),
        (dict(n_train=0), "n_train"),
        (dict(w_support="fixed"), "w_support"),
    ],
)
def test_bad_config_names_the_key(kwargs, key):
    with pytest.raises(ValueError, match=key):
        TeacherConfig(**kwargs)
