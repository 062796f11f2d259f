"""The binary readout: how a model's H heads map to the score of the binary task.

With 2-class supervision a model has H = 2 heads read as (+1, -1); with k-class
supervision it has one head per fine class read with that class's sign. Two modes
(:data:`READOUT_MODES`):

* ``"sum"`` (the default): "sum of J+ logits - sum of J- logits" (Li et al., ICLR 2025);
* ``"log_odds"``: log P(J+) - log P(J-) under the softmax of the heads, i.e.
  logsumexp of the J+ logits - logsumexp of the J- logits: the coarse-graining of a
  softmax classifier (its sign agrees with "is the arg-max class in J+?" up to ties in
  mass). For two heads (+1, -1) both modes are the same score z_+ - z_-.

A model reads its mode from the attribute ``readout_mode`` (set with
:func:`set_readout_mode`; not saved with the weights: it is an evaluation choice).
"""

from __future__ import annotations

import torch

SUPERVISIONS = ("binary", "multiclass")
READOUT_MODES = ("sum", "log_odds")


def readout_for(supervision: str, sign: torch.Tensor) -> torch.Tensor:
    """(H,) readout mapping head outputs to the binary score for a supervision.

    ``sign`` is the (k,) +-1 cluster sign; binary training uses heads (+, -).
    """
    if supervision == "binary":
        return torch.tensor([1.0, -1.0])
    if supervision == "multiclass":
        return sign.to(torch.float32).clone()
    raise ValueError(f"supervision must be one of {SUPERVISIONS}, got {supervision!r}")


def binary_score(logits: torch.Tensor, readout: torch.Tensor, mode: str = "sum") -> torch.Tensor:
    """(n,) score of the binary task from (n, H) logits and the (H,) +-1 readout."""
    if mode == "sum":
        return logits @ readout
    if mode == "log_odds":
        pos, neg = readout > 0, readout < 0
        return torch.logsumexp(logits[:, pos], 1) - torch.logsumexp(logits[:, neg], 1)
    raise ValueError(f"readout mode must be one of {READOUT_MODES}, got {mode!r}")


def set_readout_mode(model: torch.nn.Module, mode: str) -> torch.nn.Module:
    """Make ``model.binary_score`` use ``mode`` (ValueError on an unknown mode)."""
    if mode not in READOUT_MODES:
        raise ValueError(f"readout mode must be one of {READOUT_MODES}, got {mode!r}")
    model.readout_mode = mode
    return model
