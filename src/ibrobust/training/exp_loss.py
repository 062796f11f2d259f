"""The exponential loss on margins, computed without overflow.

L(m) = (1/n) sum_i exp(-m_i) is formed as exp(logsumexp(-m) - log n): the largest term
is factored out, so L is finite whenever the *mean* is representable even if single
terms are not (fp32: m = [-89, 1e4] has exp(89) > 3.4e38 but a mean of 2.2e38), huge
positive margins give 0 (never NaN), and the gradient dL/dm = -L softmax(-m) is finite
whenever L is. ``log_exp_margin_loss`` is finite for every finite margin.
"""

from __future__ import annotations

import math

import torch


def log_exp_margin_loss(m: torch.Tensor) -> torch.Tensor:
    """log of the mean of exp(-m) over the last dimension: (..., n) -> (...)."""
    return torch.logsumexp(-m, dim=-1) - math.log(m.shape[-1])


def exp_margin_loss(m: torch.Tensor) -> torch.Tensor:
    """Mean of exp(-m) over the last dimension, (..., n) -> (...), overflow-safe."""
    return torch.exp(log_exp_margin_loss(m))


def exp_margin_loss_grad(m: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(L (...), dL/dm (..., n)) for L = mean exp(-m), with dL/dm = -L * softmax(-m)."""
    lse = torch.logsumexp(-m, dim=-1, keepdim=True)  # (..., 1)
    loss = torch.exp(lse - math.log(m.shape[-1]))  # (..., 1)
    return loss.squeeze(-1), -loss * torch.exp(-m - lse)
