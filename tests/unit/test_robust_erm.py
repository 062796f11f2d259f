"""Vectorised robust ERM: log-space loss, batch = one-at-a-time, agreement with the Optimizer,
implicit bias towards the minimum-norm robust separators, stopping rule, metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ibrobust.analysis.linear_margin import (
    linf_margin,
    min_l1_robust_separator,
    min_l2_robust_separator,
)
from ibrobust.analysis.linear_metrics import (
    clean_accuracy,
    l1_norm,
    l2_norm,
    robust_accuracy,
    robust_gap,
    robust_margins,
)
from ibrobust.data.teacher import TeacherConfig, make_teacher_batch, make_teacher_data
from ibrobust.models.diagonal import DiagonalNet
from ibrobust.studies.price_linear.tables import cosine
from ibrobust.training.robust_erm import (
    ALGORITHMS,
    RobustERMConfig,
    normalized_gradient,
    robust_log_loss,
    train_robust_erm,
)
from ibrobust.updates import SteepestDescent


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: OpenMP barriers on a busy 2-core machine cost more than the math."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def small_problem(seed=0, d=10, n=8, draws=1, k_w=None):
    cfg = TeacherConfig(d=d, k_w=k_w or d, k_x=d, entries="gaussian", n_train=n, n_test=500)
    return make_teacher_batch(cfg, seed, range(draws))


def test_log_loss_matches_naive_and_survives_huge_margins():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(2, 5, 3, generator=g, dtype=torch.float64)
    w = torch.randn(2, 3, generator=g, dtype=torch.float64)
    eps = torch.tensor([0.0, 0.1], dtype=torch.float64)
    log_loss, m = robust_log_loss(w, z, eps)
    naive_m = (z @ w.unsqueeze(-1)).squeeze(-1) - eps[:, None] * w.abs().sum(-1, keepdim=True)
    torch.testing.assert_close(m, naive_m)
    torch.testing.assert_close(log_loss, torch.log(torch.exp(-naive_m).mean(-1)))
    # margins ~ 1e4 (exp(-m) underflows to 0) and ~ -1e4 (overflows): log L stays exact
    z = z * torch.sign(z @ w.unsqueeze(-1))  # every margin positive at eps = 0
    for sign in (1.0, -1.0):
        big = sign * 1e4 * w
        log_loss, m = robust_log_loss(big, z, torch.zeros(2, dtype=torch.float64))
        shift = (-m).amax(-1)  # the same sum, shifted by hand
        expected = shift + torch.log(torch.exp(-m - shift[:, None]).sum(-1)) - math.log(5)
        assert torch.isfinite(log_loss).all() and bool((sign * log_loss < -1000).all())
        torch.testing.assert_close(log_loss, expected)
        assert torch.isfinite(normalized_gradient(big, z, eps, m)).all()


@pytest.mark.parametrize(
    ("algorithm", "scale", "c"),
    [("gd", 100, 1), ("cd", 100, 1), ("sd", 100, 1), ("diag_gd", 1, None)],
)
def test_training_far_below_1e300_has_no_nan(algorithm, scale, c):
    batch = small_problem()
    x = batch.x_train * scale  # large margins from the first steps on
    cfg = RobustERMConfig(
        algorithm=algorithm, max_iters=300, loss_threshold=0.0, adaptive=True, c=c
    )
    res = train_robust_erm(x, batch.y_train, 0.0, cfg)
    assert (
        torch.isfinite(res.w).all()
        and torch.isfinite(res.log_loss).all()
        and not bool(res.diverged.any())
    )
    assert float(res.log_loss.max()) < math.log(1e-300)  # reported as a log, not as 0


def test_divergence_is_flagged_and_stops():
    batch = small_problem()
    cfg = RobustERMConfig(
        algorithm="diag_gd", max_iters=3000, loss_threshold=0.0, c=1.0
    )  # too large for diag
    res = train_robust_erm(batch.x_train, batch.y_train, 0.0, cfg)
    assert bool(res.diverged.all()) and not bool(res.converged.any()) and int(res.iters[0]) < 3000


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_batch_equals_one_at_a_time(algorithm):
    batch = small_problem(seed=1, d=12, n=10, draws=3)
    gamma = torch.tensor([linf_margin(batch.x_train[b], batch.y_train[b]).gamma for b in range(3)])
    # draws x eps as one batch of 6 problems
    x = batch.x_train.repeat(2, 1, 1)
    y = batch.y_train.repeat(2, 1)
    eps = torch.cat([0.0 * gamma, 0.5 * gamma])
    cfg = RobustERMConfig(algorithm=algorithm, max_iters=400, loss_threshold=1e-4)
    together = train_robust_erm(x, y, eps, cfg)
    chunked = train_robust_erm(x, y, eps, cfg, chunk_bytes=1)  # one problem per sub-batch
    assert len(set(together.iters.tolist())) > 1  # problems stop at different times
    for b in range(6):
        alone = train_robust_erm(x[b : b + 1], y[b : b + 1], float(eps[b]), cfg)
        assert int(alone.iters[0]) == int(together.iters[b]) == int(chunked.iters[b])
        torch.testing.assert_close(alone.w[0], together.w[b], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(alone.w[0], chunked.w[b], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(alone.log_loss[0], together.log_loss[b], rtol=1e-10, atol=1e-12)


def test_stopping_rule_is_first_iterate_below_threshold():
    batch = small_problem(seed=2, draws=2)
    cfg = RobustERMConfig(algorithm="gd", max_iters=10_000, loss_threshold=1e-3, history_every=1)
    res = train_robust_erm(batch.x_train, batch.y_train, 0.0, cfg)
    assert bool(res.converged.all()) and bool((res.log_loss < math.log(1e-3)).all())
    hist = torch.stack([row["log_loss"] for row in res.history])  # (T, B)
    for b in range(2):
        k = int(res.iters[b])
        assert float(hist[k - 1, b]) >= math.log(1e-3) > float(hist[k, b])
        assert torch.isnan(hist[k + 1 :, b]).all()  # stopped problems are not stepped
    capped = train_robust_erm(
        batch.x_train, batch.y_train, 0.0, RobustERMConfig(max_iters=3, loss_threshold=1e-30)
    )
    assert capped.iters.tolist() == [3, 3] and not bool(capped.converged.any())


@pytest.mark.parametrize(("algorithm", "norm"), [("gd", "l2"), ("cd", "l1"), ("sd", "linf")])
def test_trainer_and_optimizer_take_the_same_steps(algorithm, norm):
    """The vectorised trainer and SteepestDescent share steepest_direction: same iterates."""
    batch = small_problem(seed=3, d=6, n=5)
    x, y = batch.x_train[0], batch.y_train[0]
    eps = 0.3 * linf_margin(x, y).gamma
    steps = 25
    cfg = RobustERMConfig(
        algorithm=algorithm,
        max_iters=steps,
        loss_threshold=0.0,
        c=0.05,
        lr_max=1e6,
        zero_subgradient="zero",
    )
    res = train_robust_erm(x[None], y[None], eps, cfg)

    w = torch.nn.Parameter(torch.zeros(6, dtype=torch.float64))
    opt = SteepestDescent([w], lr=1e6, norm=norm, adaptive=True, c=0.05)
    z = y[:, None] * x
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.exp(-(z @ w - eps * w.abs().sum())).mean()  # autograd: d|w|/dw at 0 is 0
        loss.backward()
        opt.step(loss=loss.detach())
    torch.testing.assert_close(res.w[0], w.detach(), rtol=1e-9, atol=1e-12)


def test_min_norm_subgradient_keeps_a_stationary_zero():
    """eps >= |data gradient| at w = 0: 0 minimises the robust loss and min_norm stays there."""
    x = torch.tensor([[[1.0, 0.5], [0.8, -0.2]]], dtype=torch.float64)
    y = torch.ones(1, 2, dtype=torch.float64)
    eps = 1.0  # |mean y x| <= 0.9 < eps
    for alg in ("gd", "cd", "sd"):
        res = train_robust_erm(
            x, y, eps, RobustERMConfig(algorithm=alg, max_iters=5, loss_threshold=0.0)
        )
        assert torch.equal(res.w, torch.zeros(1, 2, dtype=torch.float64))
        naive = RobustERMConfig(
            algorithm=alg, max_iters=5, loss_threshold=0.0, zero_subgradient="zero"
        )
        assert float(train_robust_erm(x, y, eps, naive).log_loss[0]) > 0.0  # moved, and got worse


@pytest.mark.parametrize(
    ("algorithm", "frac"), [("gd", 0.0), ("gd", 0.5), ("cd", 0.0), ("cd", 0.5)]
)
def test_direction_approaches_the_minimum_norm_robust_separator(algorithm, frac):
    batch = small_problem(seed=0, d=10, n=8, draws=2)
    gamma = np.array([linf_margin(batch.x_train[b], batch.y_train[b]).gamma for b in range(2)])
    eps = frac * gamma
    cfg = RobustERMConfig(algorithm=algorithm, max_iters=4000, loss_threshold=0.0)
    res = train_robust_erm(batch.x_train, batch.y_train, torch.as_tensor(eps), cfg)
    solve = min_l2_robust_separator if algorithm == "gd" else min_l1_robust_separator
    for b in range(2):
        ref = torch.as_tensor(solve(batch.x_train[b], batch.y_train[b], float(eps[b])).w)
        assert float(cosine(res.w[b], ref)) > 0.99


def test_diagonal_net_is_sparser_than_gd():
    cfg = TeacherConfig(d=40, k_w=3, k_x=40, entries="gaussian", n_train=20, n_test=10)
    batch = make_teacher_batch(cfg, 0, range(3))
    gamma = torch.tensor([linf_margin(batch.x_train[b], batch.y_train[b]).gamma for b in range(3)])
    eps = 0.3 * gamma
    gd = train_robust_erm(
        batch.x_train, batch.y_train, eps, RobustERMConfig(algorithm="gd", max_iters=2000)
    )
    diag = train_robust_erm(
        batch.x_train,
        batch.y_train,
        eps,
        RobustERMConfig(algorithm="diag_gd", max_iters=2000, alpha=0.01),
    )
    torch.testing.assert_close(diag.w, diag.u**2 - diag.v**2)
    ratio_gd = l1_norm(gd.w) / l2_norm(gd.w)  # in [1, sqrt(d)]; small = sparse
    ratio_diag = l1_norm(diag.w) / l2_norm(diag.w)
    assert bool((ratio_diag < 0.75 * ratio_gd).all()), (ratio_diag, ratio_gd)
    assert bool((robust_accuracy(diag.w, batch.x_train, batch.y_train, eps) == 1).all())


def test_diagonal_net_module():
    net = DiagonalNet(4, alpha=0.2)
    torch.testing.assert_close(net.u.detach(), torch.full((4,), 0.1, dtype=torch.float64))
    assert torch.equal(net.weight(), torch.zeros(4, dtype=torch.float64))
    with torch.no_grad():
        net.u.copy_(torch.tensor([1.0, 2.0, 0.0, 0.0]))
    x = torch.tensor([[1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(net(x), torch.tensor([5.0 - 4 * 0.01], dtype=torch.float64))


def test_metrics_closed_form_against_explicit_attack():
    data = make_teacher_data(
        TeacherConfig(d=8, k_w=8, k_x=8, entries="gaussian", n_train=30, n_test=200), 0
    )
    w = data.w_star + 0.3 * torch.randn(
        8, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    eps = 0.2
    x_adv = data.x_test - eps * data.y_test[:, None] * torch.sign(w)  # the worst-case perturbation
    explicit = ((x_adv @ w) * data.y_test > 0).double().mean()
    torch.testing.assert_close(robust_accuracy(w, data.x_test, data.y_test, eps), explicit)
    torch.testing.assert_close(
        robust_margins(w, data.x_test, data.y_test, eps), data.y_test * (x_adv @ w)
    )
    assert float(clean_accuracy(w, data.x_test, data.y_test)) >= float(explicit)
    # batched w (B, d) against a shared test set and per-problem training sets
    wb = torch.stack([w, -w])
    acc = robust_accuracy(wb, data.x_test, data.y_test, torch.tensor([eps, eps]))
    torch.testing.assert_close(acc[0], explicit)
    gap = robust_gap(
        wb,
        data.x_train.expand(2, -1, -1),
        data.y_train.expand(2, -1),
        data.x_test,
        data.y_test,
        eps,
    )
    assert gap.shape == (2,)
    assert float(cosine(w, 2 * w)) == pytest.approx(1.0) and float(cosine(w, torch.zeros(8))) == 0.0
    assert (
        float(robust_accuracy(torch.zeros(8, dtype=torch.float64), data.x_test, data.y_test)) == 0.0
    )


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        (dict(algorithm="adam"), "algorithm"),
        (dict(scale="x"), "scale"),
        (dict(zero_subgradient="one"), "zero_subgradient"),
        (dict(loss_threshold=2.0), "loss_threshold"),
        (dict(max_iters=-1), "max_iters"),
        (dict(adaptive=True, scale="unit"), "lr_max"),
        (dict(c=-1.0), "c"),
    ],
)
def test_bad_config_names_the_key(kwargs, key):
    with pytest.raises(ValueError, match=key):
        RobustERMConfig(**kwargs)


def test_bad_inputs_raise():
    x = torch.zeros(2, 3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="eps"):
        train_robust_erm(x, torch.ones(2, 3), torch.tensor([0.1, 0.2, 0.3]), RobustERMConfig())
    with pytest.raises(ValueError, match="y"):
        train_robust_erm(x, torch.zeros(2, 3), 0.0, RobustERMConfig())


@pytest.mark.parametrize("algorithm", ["gd", "cd", "diag_gd"])
def test_checkpoints_are_the_first_iterate_of_each_loss_decade(algorithm):
    """checkpoint_decades records, per problem, the first step t with L(w_t) <= 10^-k for
    each new k >= 1 (read off the every-step history), its log-loss and its w; the
    stopping iterate at a threshold 10^-K is the last one; recording changes no iterate."""
    batch = small_problem(seed=5, d=10, n=8, draws=2)
    eps = torch.tensor([0.0, 0.05])
    base = RobustERMConfig(algorithm=algorithm, max_iters=20_000, loss_threshold=1e-6)
    plain = train_robust_erm(batch.x_train, batch.y_train, eps, base)
    cfg = RobustERMConfig(**{**vars(base), "checkpoint_decades": True, "history_every": 1})
    res = train_robust_erm(batch.x_train, batch.y_train, eps, cfg)
    assert plain.checkpoints is None and bool(res.converged.all())
    torch.testing.assert_close(res.w, plain.w, rtol=0, atol=0)
    assert res.iters.tolist() == plain.iters.tolist()
    hist = torch.stack([row["log_loss"] for row in res.history])  # (T, B)
    ck = res.checkpoints
    assert ck.problem.tolist() == sorted(ck.problem.tolist())
    for b in range(2):
        k = torch.floor(-hist[: int(res.iters[b]) + 1, b] / math.log(10)).clamp_min(0)
        before = torch.cat([torch.zeros(1, dtype=k.dtype), k.cummax(0).values[:-1]])
        want = torch.nonzero(k > before).squeeze(-1).tolist()  # a new deepest decade
        mine = ck.problem == b
        assert ck.step[mine].tolist() == want and float(k.max()) == 6
        torch.testing.assert_close(ck.log_loss[mine], hist[want, b])
        torch.testing.assert_close(ck.w[mine][-1], res.w[b])  # the stopping iterate
    # batched = chunked: every problem's checkpoints are its own
    chunked = train_robust_erm(batch.x_train, batch.y_train, eps, cfg, chunk_bytes=1)
    assert chunked.checkpoints.step.tolist() == ck.step.tolist()
    torch.testing.assert_close(chunked.checkpoints.w, ck.w)


def test_checkpoints_of_a_hand_computed_step():
    """One point z = y x = (1, 0), GD with c = 1 (eta_t = 1 / L): L(0) = 1, the first step
    is w = 1 * L * G-direction = (1, 0), L = e^-1 (decade 0, no checkpoint); the second
    w = (1 + e^-1 * e, 0) = (2, 0), L = e^-2 = 0.135 (decade 0); the third w = (3, 0),
    L = e^-3 = 0.0498 <= 0.1: the first checkpoint, at t = 3."""
    x, y = torch.tensor([[[1.0, 0.0]]]), torch.tensor([[1.0]])
    cfg = RobustERMConfig(algorithm="gd", c=1.0, max_iters=3, loss_threshold=0.0,
                          checkpoint_decades=True)  # fmt: skip
    ck = train_robust_erm(x, y, 0.0, cfg).checkpoints
    assert ck.problem.tolist() == [0] and ck.step.tolist() == [3]
    assert float(ck.log_loss[0]) == pytest.approx(-3.0)
    torch.testing.assert_close(ck.w[0], torch.tensor([3.0, 0.0], dtype=torch.float64))
