"""Closed-form metrics of linear classifiers under l_inf perturbations (Tsilivis et al. Sec. 5.1).

For f(x) = <w, x> and ||delta||_inf <= eps the worst case is
``min_delta y <w, x + delta> = y <w, x> - eps ||w||_1`` (attained at delta = -eps y sign(w)),
so robust accuracy is exact, no attack needed. A point counts as correct only if its
(robust) margin is strictly positive: w = 0, or a point on the boundary, is an error.

Shapes: a batch of predictors w (B, d) against either its own data x (B, n, d) or one
shared data set x (n, d) (the test set); a single w (d,) with x (n, d) works too.
"""

from __future__ import annotations

import torch


def linear_scores(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """<w_b, x_bi>: w (d,) & x (n, d) -> (n,); w (B, d) & x (n, d) -> (B, n); w (B, d) & x (B, n, d) -> (B, n)."""
    if w.dim() == 1:
        return x @ w
    if x.dim() == 2:
        return w @ x.T  # (B, n)
    if x.dim() == 3 and x.shape[0] == w.shape[0]:
        return torch.bmm(x, w.unsqueeze(-1)).squeeze(-1)  # (B, n)
    raise ValueError(f"incompatible shapes w {tuple(w.shape)} and x {tuple(x.shape)}")


def robust_margins(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, eps: float | torch.Tensor = 0.0
) -> torch.Tensor:
    """(..., n) worst-case margins y <w, x> - eps ||w||_1; eps a float or (B,)."""
    eps = torch.as_tensor(eps, dtype=w.dtype, device=w.device)
    l1 = w.abs().sum(-1)  # (...,)
    return y * linear_scores(w, x) - (eps * l1).unsqueeze(-1)


def robust_accuracy(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, eps: float | torch.Tensor = 0.0
) -> torch.Tensor:
    """(...,) fraction of points with worst-case margin > 0 at l_inf radius eps."""
    return (robust_margins(w, x, y, eps) > 0).to(torch.float64).mean(-1)


def clean_accuracy(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(...,) fraction of points with y <w, x> > 0."""
    return robust_accuracy(w, x, y, 0.0)


def robust_gap(
    w: torch.Tensor,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    eps: float | torch.Tensor,
) -> torch.Tensor:
    """(...,) robust generalisation gap = robust train accuracy - robust test accuracy at eps."""
    return robust_accuracy(w, x_train, y_train, eps) - robust_accuracy(w, x_test, y_test, eps)


def normalized_linf_margin(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(...,) min_i y_i <w, x_i> / ||w||_1 (<= gamma* for every w; NaN-free: 0/0 -> -inf)."""
    m = (y * linear_scores(w, x)).amin(-1)
    l1 = w.abs().sum(-1)
    return torch.where(l1 > 0, m / l1.clamp_min(torch.finfo(w.dtype).tiny), float("-inf"))


def l1_norm(w: torch.Tensor) -> torch.Tensor:
    return w.abs().sum(-1)


def l2_norm(w: torch.Tensor) -> torch.Tensor:
    return torch.linalg.vector_norm(w, 2, dim=-1)
