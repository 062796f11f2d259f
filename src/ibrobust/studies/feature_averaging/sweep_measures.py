"""The measures of Study FA's scaling-sweep claims (claims.yaml, fa.scaling_slope* and the
lambda trends over d), from ``critical_radius_scaling.csv``: the 2-class critical radius's
log-log slope on k or d with the radii's read-off brackets in its interval
(:func:`scaling_slope`), a lambda column (per run, its final checkpoint's value) as a slope
on ln d over the sweep (:func:`sweep_slope`), and the base cell's number shown as a
diagnostic where the sweep does not record the column (:func:`base_cell`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from ibrobust.analysis.readoff import pooled_slope_bracket
from ibrobust.claims.core import Measurement, NotRun, StudyContext, pooled_slope, trend
from ibrobust.claims.intervals import slope_interval, widened
from ibrobust.studies.feature_averaging.measures import SETTING, SOURCES, d_and_k
from ibrobust.studies.feature_averaging.tables import HI, LO, REFINED


def _sweep_missing(column: str, key: str) -> str:
    path = SOURCES["scaling"].path
    return (
        f"the scaling sweep over {key} records no {column!r} per run ({path} carries no "
        "lambda decomposition: rule decompose is not requested for the sweep's nets); judging "
        "it takes one decompose job per sweep net (their model.pt keep the checkpoints: no "
        "retraining) and the column in the sweep's table"
    )


def sweep_slope(label: str, column: str, key: str = "d", diagnostic=None):
    """The least-squares slope of ``column`` (per run, its final checkpoint's value) on
    ln(``key``) over the scaling sweep's rows of nets ``label``, common to the seeds (an
    intercept per seed; :func:`ibrobust.claims.measurement.pooled_slope`): a trend along
    the growing variable. :class:`NotRun` naming what is missing where the sweep's table has
    no such column (its nets are not decomposed); ``diagnostic(src, ctx)``: a text added to
    that reason (e.g. the base cell's number, shown, not judged)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = src["scaling"]
        df = df[(df["key"] == key) & (df["label"] == label)]
        if column not in df or df[column].isna().all():
            extra = diagnostic(src, ctx) if diagnostic is not None else ""
            raise NotRun(_sweep_missing(column, key) + (f"; {extra}" if extra else ""))
        df = df[df[column].notna()].drop_duplicates(["seed", "dataset"])
        m = pooled_slope(
            np.log(df[key].astype(float)), df[column].astype(float),
            df["seed"].astype(int).to_numpy(), f"({key}, seed) pairs",
        )  # fmt: skip
        note = f"{len(m.values)} seeds' slopes {', '.join(f'{v:.3g}' for v in m.values)}"
        return trend(replace(m, note=note), f"ln {key} (the sweep's final checkpoints)")

    return compute


def base_cell(column: str, setting: str, what: str):
    """A diagnostic for :func:`sweep_slope`: the mean of summary ``column`` over the ``setting``
    runs of the sweep's base dataset, as text ("" where the summary has none)."""

    def text(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> str:
        base = (ctx.config.get("scaling") or {}).get("dataset")
        df = src.get("summary")
        if base is None or df is None or column not in df:
            return ""
        v = df[(df["dataset"] == base) & (df[SETTING] == setting)].drop_duplicates("seed")
        v = v[column].dropna()
        if v.empty:
            return ""
        d, _ = d_and_k(ctx, base)
        return (
            f"{what} at the base d = {d} alone (shown, not judged): {v.mean():.3g} ({len(v)} seeds)"
        )

    return text


# ---- the critical radius's slope on k or d -------------------------------------------------
def scaling_slope(setting: str, key: str = "k"):
    """The least-squares slope of log(critical radius) on log(``key``) over the sweep, common
    to the seeds (an intercept per seed; :func:`ibrobust.claims.measurement.pooled_slope`),
    its interval widened by the radii's read-off brackets (:func:`slope_measurement`). Values
    never falling to 50 % on the grid are left out; 2-class nets have one score, so any
    readout's rows serve."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = src["scaling"]
        df = df[(df["key"] == key) & (df["label"] == setting) & df["critical_radius"].notna()]
        df = df.drop_duplicates(["seed", "dataset"])
        if df.empty:
            raise NotRun(f"no {setting} critical radius in the {key} sweep")
        return slope_measurement(df, key, ctx)

    return compute


def _sweep_resolution(refined: int, n: int, ctx: StudyContext) -> str:
    """What the sweep radii's brackets come from, in words (``refined`` of ``n`` bisected)."""
    tol = (ctx.config.get("refine") or {}).get("tolerance")
    bisected = "per-point bisection" + (f" to {float(tol):g}" if tol else "")
    if refined == n:
        return f"the radii's brackets: {bisected}"
    if refined == 0:
        return "the radii's brackets: the sweep grid's cells"
    return (
        f"the radii's brackets: {refined} of {n} by {bisected}, the others the sweep grid's cells"
    )


def slope_measurement(df: pd.DataFrame, key: str, ctx: StudyContext) -> Measurement:
    """The pooled log-log slope of ``df``'s radii on ``key`` with the read-off part of its
    interval: the refined radius and its bisected bracket where the table has them (rule
    fa_refine), else the grid's interpolated radius in its grid cell (``critical_radius.lo``
    / ``.hi``; a table without them: no read-off part, said in the note). The slope is linear
    in the log radii, so its extremes over the brackets are exact
    (:func:`ibrobust.analysis.readoff.pooled_slope_bracket`); leaving a seed out refits and
    re-brackets without it."""
    fine = df.get(f"critical_radius{REFINED}", pd.Series(math.nan, index=df.index))
    r = fine.where(fine.notna(), df["critical_radius"]).astype(float)
    seeds = df["seed"].astype(int).to_numpy()
    x = np.log(df[key].astype(float).to_numpy())
    m = pooled_slope(x, np.log(r.to_numpy()), seeds, f"({key}, seed) pairs")
    note = f"{len(m.values)} seeds' slopes {', '.join(f'{v:.3f}' for v in m.values)}"
    if f"critical_radius{LO}" not in df or df[f"critical_radius{LO}"].isna().any():
        return Measurement(
            m.values, unit=m.unit, interval=m.interval, jackknife=m.jackknife,
            note=note + "; no read-off brackets in the table (the grid's resolution not in the "
            "interval)",
        )  # fmt: skip
    with np.errstate(divide="ignore"):  # a bracket from 0 (the grid's first cell): -inf
        lo = np.log(df[f"critical_radius{LO}"].astype(float).to_numpy())
    hi = np.log(df[f"critical_radius{HI}"].astype(float).to_numpy())
    s_lo, s_hi = pooled_slope_bracket(x, lo, hi, seeds)
    slope = slope_interval(x, np.log(r.to_numpy()), groups=seeds)
    center = slope.center if slope is not None else float(np.mean(m.values))
    # exact brackets give the slope itself up to rounding: no read-off part then
    eps = 1e-12 * max(1.0, abs(center))
    below, above = (max(0.0, d) if d > eps else 0.0 for d in (center - s_lo, s_hi - center))
    resolution = _sweep_resolution(int(fine.notna().sum()), len(df), ctx)

    def iv(level: float):
        base = m.interval(level) if callable(m.interval) else m.interval
        if base is None or (below, above) == (0.0, 0.0):
            return base
        return widened(base, below, above, resolution)

    def without() -> list[tuple[str, Measurement]]:
        out = []
        for g in dict.fromkeys(seeds.tolist()):
            rest = df[df["seed"].astype(int) != g]
            if rest["seed"].nunique() >= 1 and len(rest) >= 3:
                try:
                    out.append((f"seed {g}", slope_measurement(rest, key, ctx)))
                except (NotRun, ValueError):
                    continue
        return out

    return Measurement(
        m.values, unit=m.unit, interval=iv, jackknife=without, note=note,
        resolution=resolution,
    )  # fmt: skip
