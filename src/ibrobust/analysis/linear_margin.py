"""Exact margins and minimum-norm robust separators of a linear data set (scipy LP / QP).

For l_inf perturbations of radius eps the worst-case margin of a linear classifier is
``y <w, x> - eps ||w||_1`` (Tsilivis et al., Lemma C.5), so

* the data set's l_inf margin (Definition 4.1 with the l_inf geometry) is the LP
  ``gamma* = max_{||w||_1 <= 1} min_i y_i <w, x_i>`` (:func:`linf_margin`), solved exactly
  with HiGHS after splitting ``w = w+ - w-`` (the paper estimated it by running CD);
  robust ERM at eps is separable iff ``eps < gamma*``;
* steepest descent w.r.t. a norm ||.|| converges in direction to the minimum-||.|| robust
  separator ``argmin ||w|| s.t. y_i <w, x_i> - eps ||w||_1 >= 1`` (Theorem 4.3):
  :func:`min_l1_robust_separator` (an LP -- note it is ``w_l1 / (gamma* - eps)`` for the
  max-l1-margin direction ``w_l1``, so its direction does not depend on eps) and
  :func:`min_l2_robust_separator` (a convex QP, SLSQP; meant for small instances).

All functions take one problem (numpy or torch, (n, d) and (n,)) and return float64 numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import linprog, minimize


@dataclass(frozen=True)
class MarginResult:
    gamma: float  # max_{||w||_1 <= 1} min_i y_i <w, x_i> (<= 0 iff not linearly separable)
    w: np.ndarray  # (d,) a maximiser, ||w||_1 = 1 when gamma > 0


@dataclass(frozen=True)
class SeparatorResult:
    w: np.ndarray  # (d,) minimum-norm robust separator
    norm: float  # its norm in the minimised geometry
    min_robust_margin: float  # min_i y_i <w, x_i> - eps ||w||_1 (>= 1 up to solver tolerance)


def _as_problem(
    x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor
) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=np.float64)
    y = np.asarray(y.detach().cpu() if isinstance(y, torch.Tensor) else y, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"x must be (n, d) and y (n,), got x {x.shape} and y {y.shape}")
    if not np.all(np.abs(y) == 1):
        raise ValueError(f"y must be in {{-1, +1}}, got values {np.unique(y)[:5]}")
    return x, y


def _check_eps(eps: float) -> float:
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    return float(eps)


def linf_margin(x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor) -> MarginResult:
    """Exact l_inf margin gamma* and a maximiser (LP over (w+, w-, t), HiGHS).

    max t  s.t.  y_i <x_i, w+ - w-> >= t,  1^T (w+ + w-) <= 1,  w+, w- >= 0.
    """
    x, y = _as_problem(x, y)
    n, d = x.shape
    z = y[:, None] * x  # (n, d) signed inputs
    cost = np.zeros(2 * d + 1)
    cost[-1] = -1.0  # maximise t
    a_ub = np.zeros((n + 1, 2 * d + 1))
    a_ub[:n, :d] = -z
    a_ub[:n, d : 2 * d] = z
    a_ub[:n, -1] = 1.0  # t - y<w,x> <= 0
    a_ub[n, : 2 * d] = 1.0  # ||w||_1 <= 1
    b_ub = np.zeros(n + 1)
    b_ub[n] = 1.0
    bounds = [(0, None)] * (2 * d) + [(None, None)]
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"linf_margin LP failed: {res.message}")
    w = res.x[:d] - res.x[d : 2 * d]
    return MarginResult(gamma=float((z @ w).min()), w=w)


def linf_margins(x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor) -> np.ndarray:
    """(B,) l_inf margins of a batch of problems x (B, n, d), y (B, n)."""
    if x.ndim != 3:
        raise ValueError(f"x must be (B, n, d), got {tuple(x.shape)}")
    return np.array([linf_margin(x[b], y[b]).gamma for b in range(x.shape[0])])


def eps_grid(gamma: float | np.ndarray, fractions: Sequence[float]) -> np.ndarray:
    """eps = fraction * gamma*: (..., F) for gamma of shape (...)."""
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or np.any(fr < 0):
        raise ValueError(f"fractions must be a 1-d list of non-negative numbers, got {fractions!r}")
    return np.asarray(gamma, dtype=np.float64)[..., None] * fr


def min_l1_robust_separator(
    x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor, eps: float
) -> SeparatorResult:
    """argmin ||w||_1 s.t. y_i <w, x_i> - eps ||w||_1 >= 1 (LP; feasible iff eps < gamma*)."""
    x, y = _as_problem(x, y)
    eps = _check_eps(eps)
    n, d = x.shape
    z = y[:, None] * x  # (n, d)
    cost = np.ones(2 * d)
    # -(z (w+ - w-)) + eps 1^T(w+ + w-) <= -1
    a_ub = np.hstack([-z + eps, z + eps])  # (n, 2d)
    res = linprog(cost, A_ub=a_ub, b_ub=-np.ones(n), bounds=[(0, None)] * (2 * d), method="highs")
    if res.status != 0:
        raise ValueError(f"no robust separator at eps={eps} (need eps < gamma*): {res.message}")
    w = res.x[:d] - res.x[d:]
    l1 = float(np.abs(w).sum())
    return SeparatorResult(w=w, norm=l1, min_robust_margin=float((z @ w).min() - eps * l1))


def min_l2_robust_separator(
    x: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    eps: float,
    *,
    tol: float = 1e-12,
    max_iter: int = 2000,
) -> SeparatorResult:
    """argmin ||w||_2 s.t. y_i <w, x_i> - eps ||w||_1 >= 1 (convex QP; small instances).

    With w = w+ - w-, w+- >= 0 the constraints become linear,
    ``z_i (w+ - w-) - eps 1^T (w+ + w-) >= 1``, and the optimum has disjoint supports (any
    overlap can be removed, which only loosens the constraints), so this split QP is
    exact. Solved with SLSQP from the scaled max-l1-margin point (feasible); raises
    ValueError if eps >= gamma* (infeasible) and RuntimeError if SLSQP fails.
    """
    x, y = _as_problem(x, y)
    eps = _check_eps(eps)
    n, d = x.shape
    z = y[:, None] * x  # (n, d)
    start = min_l1_robust_separator(x, y, eps).w  # feasible point
    v0 = np.concatenate([np.maximum(start, 0), np.maximum(-start, 0)])  # (2d,)
    a = np.hstack([z - eps, -z - eps])  # (n, 2d): a v >= 1

    def fun(v: np.ndarray) -> float:
        w = v[:d] - v[d:]
        return 0.5 * float(w @ w)

    def jac(v: np.ndarray) -> np.ndarray:
        w = v[:d] - v[d:]
        return np.concatenate([w, -w])

    res = minimize(
        fun,
        v0,
        jac=jac,
        method="SLSQP",
        bounds=[(0, None)] * (2 * d),
        constraints=[{"type": "ineq", "fun": lambda v: a @ v - 1.0, "jac": lambda v: a}],
        options={"ftol": tol, "maxiter": max_iter},
    )
    if not res.success:
        raise RuntimeError(f"min_l2_robust_separator SLSQP failed: {res.message}")
    w = res.x[:d] - res.x[d:]
    return SeparatorResult(
        w=w,
        norm=float(np.linalg.norm(w)),
        min_robust_margin=float((z @ w).min() - eps * np.abs(w).sum()),
    )
