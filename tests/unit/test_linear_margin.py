"""Exact l_inf margin (LP) and minimum-norm robust separators on hand cases, and CD vs the LP."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ibrobust.analysis.linear_margin import (
    eps_grid,
    linf_margin,
    linf_margins,
    min_l1_robust_separator,
    min_l2_robust_separator,
)
from ibrobust.analysis.linear_metrics import normalized_linf_margin
from ibrobust.data.teacher import TeacherConfig, make_teacher_batch
from ibrobust.training.robust_erm import RobustERMConfig, train_robust_erm


def test_margin_two_points_in_2d():
    # y<w,x>: w1 + w2 and w2 - w1 -> max of the min over ||w||_1 <= 1 is 1 at w = (0, 1)
    x = np.array([[1.0, 1.0], [1.0, -1.0]])
    y = np.array([1.0, -1.0])
    res = linf_margin(x, y)
    assert res.gamma == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(res.w, [0.0, 1.0], atol=1e-12)
    # two orthogonal positives: gamma = 1/2 at w = (1/2, 1/2)
    res = linf_margin(np.eye(2), np.ones(2))
    assert res.gamma == pytest.approx(0.5, abs=1e-12)
    np.testing.assert_allclose(res.w, [0.5, 0.5], atol=1e-12)


def test_margin_of_non_separable_data_is_zero():
    x = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert linf_margin(x, np.array([1.0, -1.0])).gamma == pytest.approx(0.0, abs=1e-12)


def test_single_point_separators_by_hand():
    x = torch.tensor([[2.0, 1.0]], dtype=torch.float64)
    y = torch.tensor([1.0], dtype=torch.float64)
    assert linf_margin(x, y).gamma == pytest.approx(2.0)  # w = e_1
    # eps = 0: min-l2 separator x / ||x||^2
    np.testing.assert_allclose(min_l2_robust_separator(x, y, 0.0).w, [0.4, 0.2], atol=1e-7)
    # eps = 1/2 with w >= 0: 1.5 w1 + 0.5 w2 >= 1 -> l2: (1.5, 0.5) / 2.5, l1: (2/3, 0)
    s2 = min_l2_robust_separator(x, y, 0.5)
    np.testing.assert_allclose(s2.w, [0.6, 0.2], atol=1e-7)
    assert s2.min_robust_margin == pytest.approx(1.0, abs=1e-7)
    s1 = min_l1_robust_separator(x, y, 0.5)
    np.testing.assert_allclose(s1.w, [2 / 3, 0.0], atol=1e-9)
    assert s1.norm == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="eps"):
        min_l1_robust_separator(x, y, 2.5)  # eps > gamma*: infeasible


def test_min_l1_separator_is_scaled_max_margin_direction():
    x, y = np.eye(2), np.ones(2)
    s1 = min_l1_robust_separator(x, y, 0.25)  # (1/2, 1/2) / (gamma* - eps)
    np.testing.assert_allclose(s1.w, [2.0, 2.0], atol=1e-9)


def test_min_l2_separator_is_optimal_against_random_feasible_points():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4))
    y = np.sign(x @ np.array([1.0, -0.5, 0.2, 0.0]))
    eps = 0.4 * linf_margin(x, y).gamma
    s2 = min_l2_robust_separator(x, y, eps)
    assert s2.min_robust_margin >= 1 - 1e-7
    z = y[:, None] * x
    for _ in range(2000):  # no feasible point nearby is shorter
        w = s2.w + 0.05 * rng.standard_normal(4)
        if (z @ w - eps * np.abs(w).sum()).min() >= 1:
            assert np.linalg.norm(w) >= s2.norm - 1e-9


def test_eps_grid_and_batched_margins():
    np.testing.assert_allclose(eps_grid(0.2, [0.0, 0.5, 1.0]), [0.0, 0.1, 0.2])
    assert eps_grid(np.array([0.1, 0.2]), [0.5, 1.0]).shape == (2, 2)
    x = np.stack([np.eye(2), np.eye(2) * 2])
    np.testing.assert_allclose(linf_margins(x, np.ones((2, 2))), [0.5, 1.0], atol=1e-12)
    with pytest.raises(ValueError, match="fractions"):
        eps_grid(0.1, [-0.5])


@pytest.fixture
def one_thread():
    """Tiny tensors: OpenMP barriers on a busy 2-core machine cost more than the math."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("frac", [0.0, 0.5])
def test_long_cd_approaches_the_lp_margin_from_below(frac):
    cfg = TeacherConfig(d=10, k_w=10, k_x=10, entries="gaussian", n_train=8, n_test=10)
    batch = make_teacher_batch(cfg, seed=0, draws=range(3))
    gamma = linf_margins(batch.x_train, batch.y_train)  # (3,)
    eps = torch.as_tensor(frac * gamma)
    res = train_robust_erm(
        batch.x_train,
        batch.y_train,
        eps,
        RobustERMConfig(algorithm="cd", max_iters=6000, loss_threshold=0.0),
    )
    nm = normalized_linf_margin(res.w, batch.x_train, batch.y_train).numpy()
    assert np.all(nm <= gamma + 1e-9)
    assert np.all(nm >= 0.95 * gamma), (nm, gamma)
