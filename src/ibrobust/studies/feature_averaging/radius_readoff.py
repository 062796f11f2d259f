"""How Study FA reads a critical radius off its measurements (:mod:`.measures` uses them):
the refined radius and its bisected bracket where the summary has them (rule fa_refine),
else the radius grid's interpolated radius in its grid cell, censored radii at the grid's
top; the crossing of a robust-accuracy curve with its bracket; ratios of bracketed values."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ibrobust.analysis.readoff import grid_bracket
from ibrobust.analysis.robustness import critical_radius
from ibrobust.claims.core import Measurement, StudyContext
from ibrobust.studies.feature_averaging.tables import HI, LO, REFINED


def points_of(*sels: pd.DataFrame) -> int | None:
    """Test points each seed's robustness is measured on: the attack jobs' measured count
    (the summary's ``n_points``, the fewest over the rows), not the config's attack_points
    (a dataset with fewer test points attacks fewer); None for a summary without it."""
    counts = [s["n_points"] for s in sels if "n_points" in s]
    if len(counts) < len(sels) or any(c.isna().any() for c in counts):
        return None
    return int(min(c.min() for c in counts))


def grid_max(ctx: StudyContext) -> float:
    return float(max(ctx.config["radii"]))


@dataclass(frozen=True)
class ReadOff:
    """Critical radii of the selected runs (one per seed, in ``sel``'s order) with their
    read-off brackets: the refined radius (rule fa_refine) where the summary has it, else
    the grid's interpolated radius in its grid cell; censored radii (NaN: never fell to 50 %
    on the grid) at the grid's top, their own bracket (``censored`` says so)."""

    values: pd.Series
    brackets: tuple[tuple[float, float], ...]
    censored: bool
    resolution: str


def read_off(sel: pd.DataFrame, col: str, ctx: StudyContext) -> ReadOff:
    """The :class:`ReadOff` of column ``col`` (the summary's ``<col>.lo/.hi/.refined``,
    :mod:`ibrobust.studies.feature_averaging.tables`; a summary without them: the grid cell
    of the config's radii, :func:`ibrobust.analysis.readoff.grid_bracket`)."""
    grid = [float(r) for r in ctx.config["radii"]]
    top = max(grid)
    vals, brackets, kinds, cens = [], [], set(), False
    for _, row in sel.iterrows():
        fine = row.get(col + REFINED, math.nan)
        lo, hi = row.get(col + LO, math.nan), row.get(col + HI, math.nan)
        if pd.notna(fine):
            v, b = float(fine), (float(lo), float(hi))
            kinds.add("bisection")
        elif pd.isna(row[col]):  # censored at the grid's top
            v, b, cens = top, (top, top), True
        else:
            v = float(row[col])
            b = (float(lo), float(hi)) if pd.notna(lo) else grid_bracket(grid, v)
            kinds.add(f"cell {b[1] - b[0]:g}")
        if math.isinf(b[1]):  # a refined radius censored above
            v, b, cens = b[0], (b[0], b[0]), True
        vals.append(v)
        brackets.append(b)
    return ReadOff(
        pd.Series(vals, index=sel.index), tuple(brackets), cens, resolution_text(kinds, ctx)
    )


def resolution_text(kinds: set[str], ctx: StudyContext) -> str:
    """What the read-off brackets come from, in words, for the verdict's reason."""
    parts = []
    if "bisection" in kinds:
        tol = (ctx.config.get("refine") or {}).get("tolerance")
        parts.append("per-point bisection" + (f" to {float(tol):g}" if tol else ""))
    cells = sorted(float(k.split()[1]) for k in kinds if k.startswith("cell"))
    if cells:
        parts.append("the radius grid's cell, " + ", ".join(f"{w:g}" for w in cells) + " wide")
    return " and ".join(parts)


def radius_measurement(sel: pd.DataFrame, col: str, ctx: StudyContext, scale: float):
    """One critical radius per seed over ``scale``, with its read-off bracket
    (:func:`read_off`): the interval carries the measurement's resolution."""
    r = read_off(sel, col, ctx)
    return Measurement(
        tuple(r.values / scale),
        lower_bound=r.censored,
        points=points_of(sel),
        brackets=tuple((lo / scale, hi / scale) for lo, hi in r.brackets),
        resolution=r.resolution,
    )


def ratio_brackets(
    num: Sequence[tuple[float, float]], den: Sequence[tuple[float, float]]
) -> tuple[tuple[float, float], ...]:
    """The bracket of each ratio a / b of two read-off values a in [a_lo, a_hi], b in
    [b_lo, b_hi] (positive radii): [a_lo / b_hi, a_hi / b_lo] (unbounded above if b_lo = 0)."""
    return tuple(
        (a0 / b1 if b1 > 0 else 0.0, a1 / b0 if b0 > 0 else math.inf)
        for (a0, a1), (b0, b1) in zip(num, den, strict=True)
    )


def falls_to(eps, acc, level: float) -> tuple[float, float, float]:
    """(radius, lo, hi) of a robust-accuracy curve over a radius grid: the first radius at
    which it falls to ``level`` (linear interpolation between grid radii,
    :func:`ibrobust.analysis.robustness.critical_radius`) and the read-off bracket the
    crossing lies in: the last grid radius still above ``level`` and the first at or below
    it (lo = hi = the grid's first radius where the curve starts at or below ``level``).
    NaN x 3 where the curve never falls to ``level`` on the grid."""
    e, a = np.asarray(eps, float), np.asarray(acc, float)
    order = np.argsort(e)
    e, a = e[order], a[order]
    if len(np.unique(e)) != len(e):
        raise ValueError(f"the radius grid repeats a radius: {e.tolist()}")
    r = critical_radius(e, a, level)
    if not math.isfinite(r):
        return (math.nan, math.nan, math.nan)
    i = int(np.nonzero(a <= level)[0][0])
    return (r, float(e[max(i - 1, 0)]), float(e[i]))
