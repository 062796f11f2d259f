"""Our number: a :class:`Measurement` holds one value per unit (seed, dataset draw, run,
cell) and the interval around their mean (:mod:`ibrobust.claims.intervals`) that a verdict
is decided on; :func:`pooled_slope` measures a trend common to several groups.

A value read off a grid (a critical radius interpolated between two radii, the first epoch
at which a curve crosses a threshold, a bisection's last bracket) is known only to within
the grid's resolution: its ``brackets`` (one [lo, hi] per unit, containing the value) carry
that into the interval (:func:`ibrobust.claims.intervals.widened`), and the verdict's reason
then says when a finer measurement, not more units, would decide
(:func:`ibrobust.claims.rules.decide`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ibrobust.claims.intervals import (
    LEVEL,
    Interval,
    censored,
    slope_interval,
    t_interval,
    widened,
)
from ibrobust.claims.verdicts import NotRun

# what a measurement is (the forms of :mod:`ibrobust.claims.forms` require one): one number
# over units, a trend along a growing variable, or one measurement per cell of a grid
LEVEL_KIND, TREND, CELLS = "level", "trend", "cells"
KINDS = (LEVEL_KIND, TREND, CELLS)


@dataclass(frozen=True)
class Measurement:
    """Our number: one value per unit (seed, dataset draw, run, cell) and the interval the
    verdict is decided on. The interval is the t interval over the values
    (:func:`ibrobust.claims.intervals.t_interval`) unless ``compute`` gives another method:
    ``interval`` maps the ledger's level to the interval (over points, a pooled slope;
    :mod:`ibrobust.claims.intervals`), e.g. ``partial(wilson, k, n)`` (or is an Interval
    of one level, e.g. in tests).
    ``points``: test points behind each unit's value (shown beside n). ``lower_bound`` marks
    values censored at the top of a radius grid (the interval then has no upper end).
    ``kind``: :data:`LEVEL_KIND` (a number), :data:`TREND` (a slope or a last/first ratio
    along the variable ``along``) or :data:`CELLS` (``cells``: one measurement per cell of a
    grid, built by :func:`ibrobust.claims.forms.per_cell`).

    ``brackets``: the read-off bracket (lo_i, hi_i) of each unit's value, for a value read
    off a grid (lo_i <= values[i] <= hi_i; e.g. the two grid radii a critical radius is
    interpolated between): the interval widens by the bracket of the mean
    (:func:`ibrobust.claims.intervals.widened`); ``resolution`` says in words what the
    brackets come from (e.g. "the radius grid's step 0.1"), for the verdict's reason."""

    values: tuple[float, ...]
    unit: str = "seeds"
    lower_bound: bool = False
    note: str = ""
    interval: Interval | Callable[[float], Interval | None] | None = None
    points: int | None = None
    # the units' names, for the fragility note (e.g. ("seed 0", "seed 1", "seed 2"))
    labels: tuple[str, ...] | None = None
    # leave-one-unit-out measurements where ``interval`` is not the t interval over
    # ``values`` (e.g. a pooled slope over seeds): (dropped unit's name, measurement)
    jackknife: Callable[[], list[tuple[str, Measurement]]] | None = None
    kind: str = LEVEL_KIND
    along: str = ""
    cells: tuple[tuple[str, Measurement], ...] = ()
    brackets: tuple[tuple[float, float], ...] | None = None
    resolution: str = ""

    def __post_init__(self) -> None:
        if not self.values:
            raise NotRun("no values to measure")
        if self.kind not in KINDS:
            raise ValueError(f"measurement kind {self.kind!r} is not one of {list(KINDS)}")
        if (self.kind == CELLS) != bool(self.cells):
            raise ValueError("a measurement has cells exactly when its kind is 'cells'")
        if any(not math.isfinite(v) for v in self.values):
            raise ValueError(f"measurement values must be finite, got {self.values}")
        if self.labels is not None and len(self.labels) != len(self.values):
            raise ValueError(f"{len(self.labels)} labels for {len(self.values)} values")
        if self.brackets is not None:
            if len(self.brackets) != len(self.values):
                raise ValueError(f"{len(self.brackets)} brackets for {len(self.values)} values")
            for v, (lo, hi) in zip(self.values, self.brackets, strict=True):
                if not lo <= v <= hi:
                    raise ValueError(f"value {v} lies outside its read-off bracket [{lo}, {hi}]")

    def leave_one_out(self) -> list[tuple[str, Measurement]] | None:
        """The measurement without each of its units in turn: (unit's name, measurement).
        From ``jackknife`` where the interval stands on something else than ``values``;
        None where no unit can be left out (one unit, or an interval over the points of one
        run: points are not units the verdict's robustness is asked about)."""
        if self.jackknife is not None:
            return self.jackknife()
        if self.kind == CELLS:
            return self._cells_left_out()
        if self.interval is not None or len(self.values) < 2:
            return None
        # without labels the units have no names: say which one by its place, not as "seed 1"
        # (which reads as seed id 1 where the seeds are 0, 1, 2)
        names = self.labels or tuple(
            f"the {_ordinal(i + 1)} of {self.n} {self.unit}" for i in range(self.n)
        )
        return [
            (
                names[i],
                replace(
                    self,
                    values=self.values[:i] + self.values[i + 1 :],
                    labels=None if self.labels is None else names[:i] + names[i + 1 :],
                    brackets=None
                    if self.brackets is None
                    else self.brackets[:i] + self.brackets[i + 1 :],
                ),
            )
            for i in range(self.n)
        ]

    def _cells_left_out(self) -> list[tuple[str, Measurement]] | None:
        """Each unit (by label) left out of every cell at once; None unless every cell names
        the same units."""
        subs = [dict(c.leave_one_out() or []) for _, c in self.cells]
        common = set(subs[0]).intersection(*subs[1:]) if subs else set()
        if not common or any(c.labels is None for _, c in self.cells):
            return None
        order = [u for u in (self.cells[0][1].labels or ()) if u in common]
        names = [name for name, _ in self.cells]

        def without(u: str) -> Measurement:
            cells = tuple((name, s[u]) for name, s in zip(names, subs, strict=True))
            return replace(self, values=tuple(c.mean for _, c in cells), cells=cells)

        return [(u, without(u)) for u in order]

    @property
    def n(self) -> int:
        """Units with a value (the interval may stand on others, e.g. points)."""
        return len(self.values)

    @property
    def mean(self) -> float:
        """The center of the interval (the mean of the values for a t interval)."""
        iv = self._given(None)
        return iv.center if iv is not None else float(np.mean(self.values))

    def _given(self, level: float | None) -> Interval | None:
        """The interval ``compute`` gave, at ``level`` (None: at its own or the default)."""
        iv = self.interval
        if iv is None or isinstance(iv, Interval):
            if iv is not None and level is not None and iv.level != level:
                raise ValueError(f"a fixed interval at level {iv.level} asked for at {level}")
            return iv
        return iv(LEVEL if level is None else level)

    @property
    def spread(self) -> float:
        """Sample sd of the per-unit values (0 for one unit)."""
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0

    @property
    def readoff(self) -> tuple[float, float]:
        """How far below and above the mean of the values the mean of the true values can
        lie by the read-off brackets alone: (mean - mean of the lower ends, mean of the upper
        ends - mean); (0, 0) without brackets."""
        if self.brackets is None:
            return (0.0, 0.0)
        v = float(np.mean(self.values))
        lo = float(np.mean([b[0] for b in self.brackets]))
        hi = float(np.mean([b[1] for b in self.brackets]))
        return (max(0.0, v - lo), max(0.0, hi - v))

    def ci(self, level: float = LEVEL) -> Interval | None:
        """The interval the verdict is decided on (None: one unit and no other method),
        widened by the read-off brackets (:attr:`readoff`; zero-width brackets, values known
        exactly, leave it as it is); a per-cell measurement has one
        per cell (:func:`ibrobust.claims.forms.judge`)."""
        if self.kind == CELLS:
            raise ValueError("a per-cell measurement has one interval per cell, not one")
        iv = self._given(level) if self.interval is not None else None
        if self.interval is None:
            iv = t_interval(self.values, self.unit, level)
        if iv is not None and self.brackets is not None and self.readoff != (0.0, 0.0):
            iv = widened(iv, *self.readoff, self.resolution)
        if iv is not None and self.lower_bound:
            iv = censored(iv)
        return iv


def _ordinal(i: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= i % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(i % 10, "th")
    return f"{i}{suffix}"


def pooled_slope(
    x: Sequence[float],
    y: Sequence[float],
    groups: Sequence,
    unit: str,
    note: str = "",
    group_name: str = "seed",
    along: str = "",
) -> Measurement:
    """The least-squares slope of ``y`` on ``x`` common to the ``groups`` (an intercept per
    group, :func:`ibrobust.claims.intervals.slope_interval`), as a measurement: its values are
    the per-group slopes (groups with two or more x values), its interval the pooled slope's,
    and leaving one group out refits without it (:func:`fragility`); a trend along ``along``
    (the variable x measures)."""
    xs, ys, gs = np.asarray(x, float), np.asarray(y, float), np.asarray(groups)
    names = list(dict.fromkeys(gs.tolist()))
    slopes = []
    for g in names:
        sel = gs == g
        if len(set(xs[sel].tolist())) >= 2:
            slopes.append(float(np.polyfit(xs[sel], ys[sel], 1)[0]))
    if not slopes:
        raise NotRun(f"no {group_name} with two or more distinct x values")

    def iv(level: float) -> Interval | None:
        return slope_interval(xs, ys, unit, level, groups=gs)

    def without() -> list[tuple[str, Measurement]]:
        out = []
        for g in names:
            keep = gs != g
            if len(set(gs[keep].tolist())) >= 1 and keep.sum() >= 3:
                try:
                    out.append(
                        (f"{group_name} {g}",
                         pooled_slope(xs[keep], ys[keep], gs[keep], unit, note, group_name,
                                      along))
                    )  # fmt: skip
                except NotRun:
                    continue
        return out

    return Measurement(
        tuple(slopes), unit=f"{group_name}s", note=note, interval=iv, jackknife=without,
        kind=TREND, along=along,
    )  # fmt: skip


def one_per_run(
    values: pd.Series, col: str, where: str, *, drop_missing: bool = False, scale: float = 1.0
) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """A claim's "one column per run" reading: ``values`` (one row per run, seed or draw,
    indexed by it) of column ``col`` times ``scale``, with the units' labels. No value at all
    is "not run" (NotRun: the column is absent or empty, e.g. a summary from before it);
    a missing value among the others is an error naming the column and ``where`` (the runs
    selected), unless ``drop_missing`` (then the runs that have it)."""
    if values.isna().all():
        raise NotRun(f"column {col!r} is NaN for every run ({where})")
    if values.isna().any() and not drop_missing:
        raise ValueError(f"column {col!r} is NaN for a {where} run")
    values = values.dropna()
    return tuple(float(v) * scale for v in values), tuple(str(i) for i in values.index)
