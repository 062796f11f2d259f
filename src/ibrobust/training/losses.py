"""Training losses on head outputs (n, H); all numerically stable."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ibrobust.training.exp_loss import exp_margin_loss


def logistic_margin_loss(
    heads: torch.Tensor, readout: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """mean log(1 + exp(-y f)) with f = heads @ readout (binary supervision)."""
    return F.softplus(-y * (heads @ readout)).mean()


def fine_cross_entropy(heads: torch.Tensor, fine: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the heads as logits against the fine (cluster) label."""
    return F.cross_entropy(heads, fine)


def exponential_margin_loss(
    heads: torch.Tensor, readout: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """mean exp(-y f), formed in log space (no overflow before the mean; Min & Vidal's loss;
    :func:`ibrobust.training.exp_loss.exp_margin_loss`)."""
    return exp_margin_loss(y * (heads @ readout))  # of the (n,) margins


LOSSES = ("auto", "logistic", "exponential")  # the config's ``loss`` (auto: by supervision)
# the concrete training losses every trainer names its loss by
BINARY_LOSSES = ("logistic", "exponential")  # of the binary margin y f(x), labels +-1
TRAINING_LOSSES = (*BINARY_LOSSES, "cross_entropy")  # cross_entropy: of the heads, k-class


def training_loss(supervision: str, loss: str = "auto") -> str:
    """The concrete loss (one of TRAINING_LOSSES) of a supervision and the config's ``loss``:
    binary -> logistic (``auto``) or exponential; multiclass -> cross_entropy."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    if supervision == "binary":
        return "exponential" if loss == "exponential" else "logistic"
    if supervision == "multiclass":
        if loss == "exponential":
            raise ValueError("multiclass supervision trains with cross-entropy, not 'exponential'")
        return "cross_entropy"
    raise ValueError(f"unknown supervision {supervision!r}")


def supervised_loss(
    supervision: str,
    heads: torch.Tensor,
    readout: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    loss: str = "auto",
) -> torch.Tensor:
    """Mean training loss: logistic (``auto``) or exponential on the binary margin for 2-class
    supervision, cross-entropy on the heads for k-class supervision."""
    name = training_loss(supervision, loss)
    if name == "exponential":
        return exponential_margin_loss(heads, readout, y)
    if name == "logistic":
        return logistic_margin_loss(heads, readout, y)
    return fine_cross_entropy(heads, fine)


def supervised_correct(
    supervision: str,
    heads: torch.Tensor,
    readout: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
) -> torch.Tensor:
    """(n,) bool: correct on the label the model is trained on (binary sign, or fine argmax)."""
    if supervision == "binary":
        return (heads @ readout) * y > 0
    if supervision == "multiclass":
        return heads.argmax(1) == fine
    raise ValueError(f"unknown supervision {supervision!r}")


def supervised_accuracy(
    supervision: str,
    heads: torch.Tensor,
    readout: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
) -> float:
    """Accuracy on the label the model is trained on (binary sign, or fine argmax)."""
    return float(supervised_correct(supervision, heads, readout, y, fine).float().mean())
