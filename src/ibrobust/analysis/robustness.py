"""Critical radii: where a robust-accuracy curve falls to a level (the tables themselves are
:mod:`ibrobust.attacks.tables`')."""

from __future__ import annotations

import numpy as np


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
