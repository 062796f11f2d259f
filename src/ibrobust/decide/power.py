"""What more units would do to a row, predicted from its measured spread.

A row's interval at ``n`` units has center ``c`` and, on the side toward the threshold ``b``
it straddles, the half-width ``h = crit(level, n) * se`` with ``se = sigma / sqrt(n)``
(``crit``: t(n - 1) for a t interval, else the normal quantile). With ``m > n`` units and
the next look's level, the interval's half-width is ``crit(level', m) * sigma / sqrt(m)``,
and its center is the mean of all ``m`` units. Given what was measured (a flat prior on the
true value: theta ~ N(c, se^2)), the mean over ``m`` units is predicted as

    N(c, sigma^2 (m - n) / (n m))

(the ``n`` units' mean plus the new units' mean, weighted n : m - n), and the row is decided
when it lands farther than the half-width from ``b``. :func:`chance_to_decide` is that
probability (the predictive probability of a sequential design, not the power at the
observed effect, which would call a center on the threshold a coin flip at every n);
:func:`units_for` the fewest units whose chance reaches a target. ``sigma`` is taken as
measured (its own uncertainty at 2-4 units is not modelled: the chances are estimates).
Vectorised over rows (numpy arrays) for the simulation; scalars for the planner.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def critical(level: float | np.ndarray, df: int | np.ndarray | None) -> np.ndarray:
    """The two-sided critical value at ``level``: t with ``df`` degrees of freedom, or the
    normal quantile (``df`` None: an interval over points, a bootstrap)."""
    q = 0.5 + np.asarray(level, dtype=float) / 2
    return stats.norm.ppf(q) if df is None else stats.t.ppf(q, df)


def chance_to_decide(
    dist: float | np.ndarray,
    sigma: float | np.ndarray,
    n: int | np.ndarray,
    m: int | np.ndarray,
    level: float,
    t_based: bool = True,
) -> np.ndarray:
    """The predicted chance that ``m`` units (``n`` measured, ``m >= n``) give an interval
    at ``level`` that excludes the threshold at distance ``dist`` from the current center
    (either side: an interval that crosses over decides too). ``sigma``: the per-unit
    standard deviation. A zero spread decides with certainty unless the center is on the
    threshold."""
    dist, sigma = np.abs(np.asarray(dist, float)), np.asarray(sigma, float)
    n, m = np.asarray(n, float), np.asarray(m, float)
    half = critical(level, m - 1 if t_based else None) * sigma / np.sqrt(m)
    spread = sigma * np.sqrt(np.maximum(m - n, 0) / (n * m))
    with np.errstate(divide="ignore", invalid="ignore"):
        above = stats.norm.sf((half - dist) / spread)  # lands beyond b + half (on c's side)
        below = stats.norm.cdf((-half - dist) / spread)  # crosses b by more than half
    sure = np.where(dist > half, 1.0, 0.0)  # no new units (m == n) or no spread: as measured
    return np.where(spread > 0, above + below, sure)


def units_for(
    dist: float,
    sigma: float,
    n: int,
    level: float,
    target: float,
    cap: int,
    t_based: bool = True,
) -> int | None:
    """The fewest units ``m`` in [n, cap] whose :func:`chance_to_decide` reaches
    ``target``; None when even ``cap`` units do not."""
    if cap < n:
        return None
    ms = np.arange(n, cap + 1)
    p = chance_to_decide(dist, sigma, n, ms, level, t_based)
    hit = np.nonzero(p >= target)[0]
    return int(ms[hit[0]]) if hit.size else None
