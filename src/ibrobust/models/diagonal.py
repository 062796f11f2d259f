"""Diagonal linear network f(x) = <u*u - v*v, x> (Woodworth et al. 2020; Tsilivis et al. eq. 14).

A 2-homogeneous reparameterisation of a linear model: same functions, different implicit
bias -- GD-based robust ERM on it is biased towards small l1 norm of w = u*u - v*v
(Tsilivis et al., Corollary 4.7 / Proposition 4.8). Initialised at the constant
u = v = alpha / sqrt(d) (so w = 0), the paper's App. F.1 choice; small alpha is the
"rich" regime that induces the l1 bias quickly.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def diagonal_weight(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """w = u*u - v*v (any matching shapes, e.g. (B, d) for a batch of networks)."""
    return u * u - v * v


def diagonal_init(
    d: int, alpha: float, *, batch: tuple[int, ...] = (), dtype: torch.dtype = torch.float64
):
    """(u, v), each (*batch, d), equal to the constant alpha / sqrt(d)."""
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    u = torch.full((*batch, d), alpha / math.sqrt(d), dtype=dtype)
    return u, u.clone()


class DiagonalNet(nn.Module):
    """Linear predictor x (..., d) -> <u*u - v*v, x> (...,), init u = v = alpha/sqrt(d)."""

    def __init__(self, d: int, alpha: float = 0.01, *, dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        u, v = diagonal_init(d, alpha, dtype=dtype)
        self.u = nn.Parameter(u)  # (d,)
        self.v = nn.Parameter(v)  # (d,)

    def weight(self) -> torch.Tensor:
        """(d,) the linear predictor w = u*u - v*v."""
        return diagonal_weight(self.u, self.v)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight()
