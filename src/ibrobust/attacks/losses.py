"""Attack objectives, registered by name. Each maps (model, x, y, fine) to a per-example
(n,) loss that the attacker *maximises*; success is judged separately, by the Task
(:mod:`ibrobust.attacks.tasks`), not by the loss.

* ``margin``: -y * binary_score(x), the binary margin of Study FA (any model);
* ``ce``: cross-entropy of the logits against the fine label (k-class models);
* ``fine_margin``: max_{j != fine} z_j - z_fine, the Carlini-Wagner margin of the fine
  task (k-class models; positive iff the argmax is wrong, up to ties).
"""

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


def fine_margin(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, fine: torch.Tensor
) -> torch.Tensor:
    """max_{j != fine} z_j - z_fine (Carlini & Wagner 2017): > 0 iff another class wins."""
    z = model(x)  # (n, H)
    z_true = z.gather(1, fine[:, None]).squeeze(1)  # (n,)
    others = z.scatter(1, fine[:, None], float("-inf"))  # the true class can't be the max
    return others.amax(dim=1) - z_true


ATTACK_LOSSES: dict[str, AttackLoss] = {
    "margin": neg_binary_margin,
    "ce": fine_cross_entropy,
    "fine_margin": fine_margin,
}


def get_attack_loss(name: str) -> AttackLoss:
    try:
        return ATTACK_LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown attack loss {name!r}; known: {sorted(ATTACK_LOSSES)}") from None


def binary_correct(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(n,) bool: the binary readout has the right sign (a tie counts as an error)."""
    return y * model.binary_score(x) > 0
