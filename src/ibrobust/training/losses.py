"""Training losses on head outputs (n, H); all numerically stable."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def logistic_margin_loss(
    heads: torch.Tensor, readout: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """mean log(1 + exp(-y f)) with f = heads @ readout (binary supervision)."""
    return F.softplus(-y * (heads @ readout)).mean()


def fine_cross_entropy(heads: torch.Tensor, fine: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the heads as logits against the fine (cluster) label."""
    return F.cross_entropy(heads, fine)


def supervised_loss(
    supervision: str,
    heads: torch.Tensor,
    readout: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
) -> torch.Tensor:
    if supervision == "binary":
        return logistic_margin_loss(heads, readout, y)
    if supervision == "multiclass":
        return fine_cross_entropy(heads, fine)
    raise ValueError(f"unknown supervision {supervision!r}")


def supervised_accuracy(
    supervision: str,
    heads: torch.Tensor,
    readout: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
) -> float:
    """Accuracy on the label the model is trained on (binary sign, or fine argmax)."""
    if supervision == "binary":
        return float(((heads @ readout) * y > 0).float().mean())
    return float((heads.argmax(1) == fine).float().mean())
