"""Robust accuracy over a radius grid, worst case over attacks, and critical radii."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # torch is imported where a tensor is handled: critical_radius needs none
    import torch


def monotone_robust(correct: torch.Tensor, eps: torch.Tensor | list[float]) -> torch.Tensor:
    """(R, n) correctness made monotone in the radius.

    A perturbation found at radius eps is also admissible at every larger radius, so an
    example fooled at eps counts as fooled at all eps' >= eps (this only ever strengthens
    the attack). Rows are reordered internally by radius and returned in input order.
    """
    import torch

    eps_t = torch.as_tensor(eps, dtype=torch.float64).reshape(-1)
    order = torch.argsort(eps_t)
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


def critical_radius(eps: np.ndarray, acc: np.ndarray, level: float = 0.5) -> float:
    """First radius at which robust accuracy falls to ``level`` (linear interpolation).

    NaN if accuracy never drops to ``level`` on the grid, or is already below it at the
    smallest radius of a grid that does not start at 0 (the crossing is off the grid).
    """
    order = np.argsort(eps)
    e, a = np.asarray(eps, float)[order], np.asarray(acc, float)[order]
    if a[0] <= level:
        return float(e[0]) if e[0] == 0 or a[0] == level else float("nan")
    below = np.nonzero(a <= level)[0]
    if below.size == 0:
        return float("nan")
    i = below[0]
    if i == 0 or a[i - 1] == a[i]:
        return float(e[i])
    return float(e[i - 1] + (a[i - 1] - level) * (e[i] - e[i - 1]) / (a[i - 1] - a[i]))
