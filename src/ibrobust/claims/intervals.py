"""Confidence intervals of the ledger's measurements: one method per kind of quantity.

Every verdict of the claims ledger is decided on a two-sided interval (95 % unless the
config's ``ledger.level`` says otherwise) around our number, computed from the units the
number was measured on. The method depends on what the number is; this module is the one
place that chooses it, and ``docs/claims.md`` (generated text aside) repeats this table:

=====================================  ==============  ==========================================
quantity                               units           interval
=====================================  ==============  ==========================================
mean of one value per seed, draw,      seeds / draws   Student t: mean +- t(n-1) s / sqrt(n)
run or (cell, seed) pair               / runs          (:func:`t_interval`). Each seed draws its
                                                       own data and test points, so the spread
                                                       over seeds holds the point sampling too
                                                       (the two-stage estimator of a nested
                                                       design). One unit gives no interval.
an accuracy or fraction over points    points          Wilson score interval (:func:`wilson`)
of one run
difference of two accuracies over      points          Newcombe's hybrid score interval
points, one run each (unpaired)                        (:func:`newcombe`); on the same points it
                                                       is conservative (their errors correlate)
mean of per-point values of one seed   points          percentile bootstrap over points
(e.g. paired differences)                              (:func:`bootstrap_mean`, seeded)
points nested in seeds, when the       seeds x points  hierarchical bootstrap: seeds, then
seeds share one point set                              points within each (:func:`hierarchical`)
slope of a log-log fit over a sweep    (value, seed)   t interval of the least-squares slope
                                       pairs           common to the seeds, an intercept per
                                                       seed, n - seeds - 1 df
                                                       (:func:`slope_interval`)
=====================================  ==============  ==========================================

A value censored at the top of a radius grid (the true value is at least it) gets an
interval whose upper end is +inf (:func:`censored`).

A value read off a grid (a crossing interpolated between two grid points, a bisection's
last bracket) is known to within a read-off bracket per unit; the interval above widens by
the bracket of the mean, below and above (:func:`widened`): the interval's sampling part
shrinks with more units, its read-off part only with a finer measurement.

:func:`units_needed` estimates from an interval's sampling half-width how many units would
shrink it to a given distance: half-widths scale as 1 / sqrt(n) (for the t interval the
critical value's own shrinking is included), so it is an estimate from the measured spread,
not a power calculation; the read-off part does not shrink, so where it alone reaches the
threshold no number of units decides (:func:`resolution_spans`). Pure functions of numpy
arrays; nothing here reads files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000  # bootstrap resamples: the percentiles move by < 0.1 of a half-width (checked)


@dataclass(frozen=True)
class Interval:
    """A two-sided interval [lo, hi] around ``center`` from ``n`` units of ``unit``.

    ``method`` names how it was computed (shown in the ledger); ``spread`` is the per-unit
    standard deviation behind a t interval (None for the other methods), used by
    :func:`units_needed`; ``readoff``: how much of its lower and upper side is the
    measurement's read-off uncertainty rather than sampling (:func:`widened`)."""

    lo: float
    hi: float
    center: float
    n: int
    unit: str
    method: str
    level: float = LEVEL
    spread: float | None = None
    readoff: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        if math.isnan(self.lo) or math.isnan(self.hi) or self.lo > self.hi:
            raise ValueError(f"interval [{self.lo}, {self.hi}] is not an interval")
        if self.n < 1:
            raise ValueError(f"an interval needs at least one unit, got n={self.n}")
        if not (self.readoff[0] >= 0 and self.readoff[1] >= 0):
            raise ValueError(f"read-off widths must be >= 0, got {self.readoff}")

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


def _level(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return level


def _z(level: float) -> float:
    return NormalDist().inv_cdf(0.5 + _level(level) / 2)


def _t(level: float, df: int) -> float:
    from scipy import stats  # here, not at import: the Snakefile loads the ledger's modules

    return float(stats.t.ppf(0.5 + _level(level) / 2, df))


def t_interval(
    values: Sequence[float], unit: str = "seeds", level: float = LEVEL
) -> Interval | None:
    """Mean +- t(n-1) s / sqrt(n) of one value per unit; None for a single unit (no spread
    to measure). Identical values give a zero-width interval."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return None
    mean, sd = float(v.mean()), float(v.std(ddof=1))
    half = _t(level, v.size - 1) * sd / math.sqrt(v.size)
    return Interval(mean - half, mean + half, mean, v.size, unit, f"t over {unit}", level, sd)


def wilson(successes: int, n: int, level: float = LEVEL) -> Interval:
    """Wilson score interval of a proportion ``successes / n`` (n points of one run)."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got {successes}/{n}")
    lo, hi = _wilson(successes / n, n, level)
    return Interval(lo, hi, successes / n, n, "points", "Wilson over points", level)


def _wilson(p: float, n: int, level: float) -> tuple[float, float]:
    z = _z(level)
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def newcombe(p1: float, n1: int, p2: float, n2: int, level: float = LEVEL) -> Interval:
    """Newcombe's hybrid score interval (his method 10) of the difference p1 - p2 of two
    proportions over n1 and n2 points (Newcombe 1998, Stat. Med. 17:873)."""
    for p, n in ((p1, n1), (p2, n2)):
        if n < 1 or not 0 <= p <= 1:
            raise ValueError(f"need a proportion in [0, 1] over n >= 1 points, got {p} over {n}")
    l1, u1 = _wilson(p1, n1, level)
    l2, u2 = _wilson(p2, n2, level)
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return Interval(lo, hi, d, min(n1, n2), "points", "Newcombe over points", level)


def _percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    a = (1 - _level(level)) / 2
    lo, hi = np.quantile(draws, [a, 1 - a])
    return float(lo), float(hi)


def bootstrap_mean(
    values: Sequence[float],
    unit: str = "points",
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of the mean of per-unit values (seeded: the same values
    give the same interval)."""
    v = np.asarray(values, dtype=float)
    if v.size < 1:
        raise ValueError("bootstrap_mean needs at least one value")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.size, size=(resamples, v.size))
    lo, hi = _percentiles(v[idx].mean(axis=1), level)
    return Interval(lo, hi, float(v.mean()), v.size, unit, f"bootstrap over {unit}", level)


def hierarchical(
    groups: Sequence[Sequence[float]],
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = 0,
    shared_points: bool = True,
) -> Interval:
    """Hierarchical percentile bootstrap of the grand mean of points nested in seeds
    (``groups``: one array of per-point values per seed). Each resample draws the seeds
    with replacement, then the points: one draw of point indices shared by every seed when
    ``shared_points`` (the seeds were evaluated on the same points, so their point noise is
    common), else a fresh draw within each seed."""
    arrays = [np.asarray(g, dtype=float) for g in groups]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("hierarchical needs at least one non-empty group")
    sizes = {a.size for a in arrays}
    if shared_points and len(sizes) > 1:
        raise ValueError(f"shared points need equal group sizes, got {sorted(sizes)}")
    rng = np.random.default_rng(seed)
    s = len(arrays)
    draws = np.empty(resamples)
    for b in range(resamples):
        pick = rng.integers(0, s, size=s)
        if shared_points:
            idx = rng.integers(0, arrays[0].size, size=arrays[0].size)
            draws[b] = np.mean([arrays[i][idx].mean() for i in pick])
        else:
            draws[b] = np.mean([rng.choice(arrays[i], arrays[i].size).mean() for i in pick])
    lo, hi = _percentiles(draws, level)
    center = float(np.mean([a.mean() for a in arrays]))
    n_points = arrays[0].size if shared_points else min(sizes)
    unit = "seeds x points"
    return Interval(
        lo, hi, center, s * n_points, unit, f"hierarchical bootstrap over {unit}", level
    )


def slope_interval(
    x: Sequence[float],
    y: Sequence[float],
    unit: str = "(value, seed) pairs",
    level: float = LEVEL,
    groups: Sequence | None = None,
) -> Interval | None:
    """t interval of the least-squares slope of y on x over all the pairs; with ``groups``
    (e.g. the seed of each pair) every group gets its own intercept and the slope is
    common (the within estimator: x and y centred per group, n - groups - 1 df), so seeds
    that differ in level but not in slope add no spread. None without a residual degree of
    freedom or with one x value per group."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    g = (
        np.zeros(xs.size, dtype=int)
        if groups is None
        else np.unique(groups, return_inverse=True)[1]
    )
    n_groups = int(g.max()) + 1 if g.size else 0
    df = xs.size - n_groups - 1
    xc, yc = xs.copy(), ys.copy()
    for k in range(n_groups):
        xc[g == k] -= xs[g == k].mean()
        yc[g == k] -= ys[g == k].mean()
    sxx = float((xc * xc).sum())
    if df < 1 or sxx == 0:
        return None
    slope = float((xc * yc).sum() / sxx)
    resid = yc - slope * xc
    stderr = math.sqrt(float((resid * resid).sum()) / df / sxx)
    half = _t(level, df) * stderr
    method = "t of the pooled OLS slope" + (", an intercept per group" if n_groups > 1 else "")
    return Interval(slope - half, slope + half, slope, xs.size, unit, method, level)


def widened(iv: Interval, below: float, above: float, resolution: str = "") -> Interval:
    """``iv`` widened by a read-off uncertainty of its center: ``below`` under its lower end,
    ``above`` over its upper end (e.g. the mean of the units' grid brackets lies ``below``
    under the mean of their read-off values). The sampling part (``iv`` itself) shrinks with
    more units, the read-off part only with a finer measurement; ``resolution`` names it in
    the method."""
    if not (below >= 0 and above >= 0):
        raise ValueError(f"read-off widths must be >= 0, got {below}, {above}")
    what = f" + read-off {resolution}" if resolution else " + read-off bracket"
    return replace(
        iv,
        lo=iv.lo - below,
        hi=iv.hi + above,
        method=iv.method + what,
        readoff=(iv.readoff[0] + below, iv.readoff[1] + above),
    )


def resolution_spans(iv: Interval, threshold: float) -> bool:
    """Whether the read-off part of ``iv`` alone reaches ``threshold``: it lies within
    [center - read-off below, center + read-off above] (a non-zero part on that side), so
    no number of units moves the interval off it; a finer measurement would."""
    below, above = iv.readoff
    if threshold < iv.center:
        return below > 0 and iv.center - below <= threshold
    return above > 0 and threshold <= iv.center + above


def censored(iv: Interval) -> Interval:
    """``iv`` for values censored at the top of a grid: the upper end is unknown (+inf)."""
    return replace(iv, hi=math.inf, method=f"{iv.method}, censored above")


def units_needed(iv: Interval, threshold: float) -> int | None:
    """About how many units would give an interval that excludes ``threshold``, from the
    measured spread (half-widths ~ 1 / sqrt(n)); None when the center sits on the
    threshold, the read-off part alone reaches it (:func:`resolution_spans`: no number of
    units decides it) or the side toward it is unbounded. The read-off part does not shrink:
    the sampling part must fit in the distance it leaves."""
    dist = abs(iv.center - threshold)
    below = threshold < iv.center
    side = iv.center - iv.lo if below else iv.hi - iv.center
    # on the threshold up to float rounding (a mean of 0.0, 0.03, 0.04, 0.05 is 0.03 - 3e-18):
    # sitting on it, not "10^30 units would decide"
    if dist <= 1e-12 * max(abs(iv.center), abs(threshold)) or not math.isfinite(side):
        return None
    if side < dist:  # already excluded on that side
        return iv.n
    if resolution_spans(iv, threshold):
        return None
    readoff = iv.readoff[0] if below else iv.readoff[1]
    dist, side = dist - readoff, side - readoff  # what the sampling part must fit in
    if iv.spread is not None and iv.spread > 0:  # t interval: the critical value shrinks too
        return _t_units(iv.spread, dist, iv.level, iv.n)
    # the interval reaches the threshold now (side >= dist), so its n does not decide: an
    # end on the threshold (side == dist: a strict rule's bound touched) needs more than n
    return max(iv.n + 1, math.ceil(iv.n * (side / dist) ** 2))


def _t_units(sd: float, dist: float, level: float, start: int) -> int:
    # the normal approximation is a lower bound on the answer; step up from it
    n = max(start, 2, math.ceil((_z(level) * sd / dist) ** 2))
    if n > 10**6:  # t(n - 1) is z to 1e-6 there (and scipy takes no df past a C long)
        return n
    while _t(level, n - 1) * sd / math.sqrt(n) >= dist:
        n += 1
    return n
