"""Read-off brackets: how precisely a quantity read off a grid is known.

A critical radius interpolated on a radius grid, a robust accuracy interpolated between two
radii, or the first epoch at which a curve crosses a threshold is a point of a grid cell,
not a measurement finer than the cell: the true crossing of the (monotone) curve can lie
anywhere in it. These functions give that cell, the read-off bracket the claims ledger
widens its intervals by (:class:`ibrobust.claims.measurement.Measurement` ``brackets``).
Pure numpy; no torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def grid_bracket(grid: Sequence[float], value: float) -> tuple[float, float]:
    """The grid cell a crossing read off ``grid`` lies in: (the largest grid point below
    ``value``, the smallest at or above it). :func:`ibrobust.analysis.robustness.
    critical_radius` returns a radius in (e_{i-1}, e_i] for the first grid radius e_i whose
    accuracy is at or below the level, so the true crossing of a monotone curve lies in that
    cell. A value on the grid's first point (e.g. radius 0: misclassified clean) is exact:
    (value, value). A value above the grid (censored) has no upper end: (value, inf)."""
    g = np.sort(np.asarray(grid, dtype=float))
    if g.size == 0 or not math.isfinite(value):
        raise ValueError(f"need a non-empty grid and a finite value, got {list(g)}, {value}")
    if value < g[0]:
        raise ValueError(f"value {value} lies below the grid's first point {g[0]}")
    if value > g[-1]:
        return (float(value), math.inf)
    below = g[g < value]
    lo = float(below[-1]) if below.size else float(value)
    return (lo, float(g[g >= value][0]))


def interpolated_bracket(
    grid: Sequence[float], acc: Sequence[float], at: float
) -> tuple[float, float]:
    """Bracket of a non-increasing curve (robust accuracy vs radius) interpolated at ``at``
    between its two grid neighbours: (the value at the right neighbour, at the left one).
    Exact (a zero-width bracket) on a grid point; ValueError off the grid."""
    order = np.argsort(np.asarray(grid, dtype=float))
    e, a = np.asarray(grid, float)[order], np.asarray(acc, float)[order]
    if not e[0] <= at <= e[-1]:
        raise ValueError(f"{at} lies off the grid [{e[0]}, {e[-1]}]")
    if np.any(np.isclose(e, at, rtol=0, atol=1e-12)):
        v = float(a[np.isclose(e, at, rtol=0, atol=1e-12)][0])
        return (v, v)
    i = int(np.searchsorted(e, at))  # e[i - 1] < at < e[i]
    return (float(min(a[i - 1], a[i])), float(max(a[i - 1], a[i])))


def first_crossing_bracket(
    steps: Sequence[float], step: float, start: float = 0.0
) -> tuple[float, float]:
    """Bracket of the first step at which a curve evaluated at ``steps`` (e.g. epochs, every
    ``eval_every``) crosses a threshold, given the first evaluated step ``step`` that has
    crossed: (the evaluated step before it, it); (``start``, it) when it is the first
    evaluated step (the curve may have crossed any time since the start)."""
    s = np.sort(np.asarray(steps, dtype=float))
    if not np.any(s == step):
        raise ValueError(f"{step} is not one of the evaluated steps")
    before = s[s < step]
    return (float(before[-1]) if before.size else min(float(start), float(step)), float(step))


def pooled_slope_bracket(
    x: Sequence[float], lo: Sequence[float], hi: Sequence[float], groups: Sequence | None = None
) -> tuple[float, float]:
    """The least and the greatest least-squares slope of y on x (with ``groups``: an
    intercept per group, the within estimator of :func:`ibrobust.claims.intervals.
    slope_interval`) over every y with lo_i <= y_i <= hi_i. The slope is linear in y,
    sum_i w_i y_i with w_i = xc_i / sum_j xc_j^2 (x centred per group), so its extremes put
    each y_i at the end its weight's sign picks (exact, not a bound). ValueError without two
    distinct x in some group."""
    xs = np.asarray(x, dtype=float)
    ylo, yhi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if not xs.shape == ylo.shape == yhi.shape or bool((ylo > yhi).any()):
        raise ValueError("pooled_slope_bracket needs x, lo <= hi of one shape")
    g = np.zeros(xs.size, int) if groups is None else np.unique(groups, return_inverse=True)[1]
    xc = xs.copy()
    for k in np.unique(g):
        xc[g == k] -= xs[g == k].mean()
    sxx = float((xc * xc).sum())
    if sxx == 0:
        raise ValueError("pooled_slope_bracket needs two distinct x values in some group")
    w = xc / sxx
    with np.errstate(invalid="ignore"):  # 0 * inf (a weight of 0 on an unbounded end)
        top = np.where(w > 0, w * yhi, np.where(w < 0, w * ylo, 0.0))
        bottom = np.where(w > 0, w * ylo, np.where(w < 0, w * yhi, 0.0))
    return float(bottom.sum()), float(top.sum())
