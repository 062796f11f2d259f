"""The binary readout: how a model's H heads map to the score of the binary task.

With 2-class supervision a model has H = 2 heads read as (+1, -1); with k-class
supervision it has one head per fine class read with that class's sign, so the binary
score is "sum of J+ logits - sum of J- logits" (Li et al., ICLR 2025).
"""

from __future__ import annotations

import torch

SUPERVISIONS = ("binary", "multiclass")


def readout_for(supervision: str, sign: torch.Tensor) -> torch.Tensor:
    """(H,) readout mapping head outputs to the binary score for a supervision.

    ``sign`` is the (k,) +-1 cluster sign; binary training uses heads (+, -).
    """
    if supervision == "binary":
        return torch.tensor([1.0, -1.0])
    if supervision == "multiclass":
        return sign.to(torch.float32).clone()
    raise ValueError(f"supervision must be one of {SUPERVISIONS}, got {supervision!r}")
