"""Attack objectives, registered by name. Each maps (model, x, y, fine) to a per-example
loss that the attacker *maximises*; success is always judged on the binary decision."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

AttackLoss = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def neg_binary_margin(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, fine: torch.Tensor
) -> torch.Tensor:
    """-y * F(x): maximising it pushes the binary readout across the boundary."""
    return -y * model.binary_score(x)


def fine_cross_entropy(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, fine: torch.Tensor
) -> torch.Tensor:
    """Cross-entropy of the heads against the fine label (multi-class models only)."""
    return F.cross_entropy(model(x), fine, reduction="none")


ATTACK_LOSSES: dict[str, AttackLoss] = {
    "margin": neg_binary_margin,
    "ce": fine_cross_entropy,
}


def get_attack_loss(name: str) -> AttackLoss:
    try:
        return ATTACK_LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown attack loss {name!r}; known: {sorted(ATTACK_LOSSES)}") from None


def binary_correct(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(n,) bool: the binary readout has the right sign (a tie counts as an error)."""
    return y * model.binary_score(x) > 0
