"""Robust accuracy over a radius grid: per-example correctness made monotone in the radius,
tabulated per attack with the worst case over attacks.

What the attack suite (:mod:`ibrobust.attacks.suite`) returns for one model; the critical
radius read off such a table is :func:`ibrobust.analysis.robustness.critical_radius`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # torch is imported where a tensor is handled
    import torch


def monotone_robust(correct: torch.Tensor, eps: torch.Tensor | list[float]) -> torch.Tensor:
    """(R, n) correctness made monotone in the radius.

    A perturbation found at radius eps is also admissible at every larger radius, so an
    example fooled at eps counts as fooled at all eps' >= eps (this only ever strengthens
    the attack). Rows are reordered internally by radius and returned in input order.
    """
    import torch

    eps_t = torch.as_tensor(eps, dtype=torch.float64).reshape(-1)
    order = torch.argsort(eps_t).to(correct.device)
    c = correct[order].clone()
    c = torch.cummin(c.to(torch.int8), dim=0).values.bool()
    out = torch.empty_like(c)
    out[order] = c
    return out


def robust_accuracy_table(
    correct_by_attack: dict[str, torch.Tensor], eps: list[float]
) -> pd.DataFrame:
    """Tidy table (attack, eps, robust_acc, n) with a ``worst`` row per radius.

    ``correct_by_attack[a]`` is (R, n) bool: example still classified correctly under
    attack a at radius eps[r]. The worst case is correct under *every* attack.
    """
    if not correct_by_attack:
        raise ValueError("no attacks to tabulate")
    rows = []
    worst = None
    for name, corr in correct_by_attack.items():
        corr = monotone_robust(corr, eps)
        worst = corr if worst is None else worst & corr
        rows += [
            {"attack": name, "eps": float(e), "robust_acc": float(c.float().mean()), "n": c.numel()}
            for e, c in zip(eps, corr, strict=True)
        ]
    rows += [
        {"attack": "worst", "eps": float(e), "robust_acc": float(c.float().mean()), "n": c.numel()}
        for e, c in zip(eps, worst, strict=True)
    ]
    return pd.DataFrame(rows)
