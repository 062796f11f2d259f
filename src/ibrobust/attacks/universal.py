"""The universal cluster direction (Frei et al., 2023) for the synthetic cluster data.

z = -y * (sum_{J+} mu_j - sum_{J-} mu_j) / ||.||, scaled to radius eps: one fixed
direction per class that lowers every positive feature and raises every negative one.
"""

from __future__ import annotations

import torch


def universal_direction(means: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """(d,) unit vector (sum_{J+} mu_j - sum_{J-} mu_j) / ||.||."""
    v = sign.to(means.dtype) @ means
    return v / v.norm()


def universal_perturbation(
    x: torch.Tensor,
    y: torch.Tensor,
    means: torch.Tensor,
    sign: torch.Tensor,
    eps: torch.Tensor | list[float],
) -> torch.Tensor:
    """Adversarial examples (R, n, d): x - eps * y * z for each radius."""
    eps_t = torch.as_tensor(eps, dtype=x.dtype).reshape(-1, 1, 1)
    z = universal_direction(means, sign)
    return x[None] - eps_t * y[None, :, None] * z[None, None, :]
