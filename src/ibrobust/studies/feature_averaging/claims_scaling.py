"""Study FA's scaling-sweep claims (kind ``feature_averaging``): the 2-class net's critical
radius against k at fixed d and against d at fixed k, from
``results/<study>/figures/critical_radius_scaling.csv`` (source ``scaling`` of
:mod:`ibrobust.studies.feature_averaging.claims`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ibrobust.analysis.readoff import pooled_slope_bracket
from ibrobust.claims.citations import LI_2025, Citation
from ibrobust.claims.core import (
    ASYMPTOTIC,
    Claim,
    Measurement,
    NotRun,
    StudyContext,
    along,
    between,
    pooled_slope,
)
from ibrobust.claims.intervals import slope_interval, widened
from ibrobust.studies.feature_averaging.tables import HI, LO, REFINED

TOL = 0.10  # docs/studies/README.md, rule P2: the theory's constant +-10 %


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


def scaling_applies(key: str):
    def applies(ctx: StudyContext) -> str | None:
        sc = ctx.config.get("scaling")
        if sc is None:
            return "the study has no scaling sweep"
        if key not in sc.get("sweeps", {}):
            return f"the scaling sweeps are over {sorted(sc.get('sweeps', {}))}, not {key}"
        return None

    return applies


def _citation(where: str) -> Citation:
    return Citation(
        LI_2025,
        "slides 'Averaged Features are Non-robust Features' (Theorem) and 'There Exists the "
        "Robust Solution!'" + where,
        "the model has nearly **zero δ -robust accuracy** for perturbation radius $\\delta = "
        "\\Omega(\\sqrt{d/k})$.",
        "a feature-averaging solution of the two-layer net on k orthogonal clusters, d large",
    )


BASIS = (
    "the quote's sqrt(d/k): the theorem's averaged net loses its robust accuracy at a radius "
    "of that order (the universal direction's, fa.universal_radius), so the exponents -1/2 "
    "in k and 1/2 in d are the source's"
)


def scaling_claims(binary: str) -> list[Claim]:
    """The sweep claims (``binary``: the 2-class nets' label in critical_radius_scaling.csv)."""
    half = 0.5
    return [
        Claim(
            id="fa.scaling_slope",
            form=ASYMPTOTIC,
            setting="scaling sweep over k, 2-class nets",
            claim="The 2-class net's critical radius follows sqrt(d/k) as k grows at fixed d.",
            citation=_citation(""),
            derivation="Strong (P2, the theory's constant +-10 %): a radius proportional to "
            "sqrt(d/k) has slope -1/2 in log k: [-0.55, -0.45]. Weak (the same direction): "
            "the radius falls as k grows, slope < 0. Judged as a trend over the whole sweep "
            "(a slope common to the seeds), not two points.",
            paper="slope -1/2 in log k (theory sqrt(d/k))",
            measure="the least-squares slope of log critical radius on log k over the sweep "
            "(critical_radius_scaling.csv; k whose radius is off the grid left out), common "
            "to the seeds with an intercept per seed",
            rule=between(
                "slope",
                (-half * (1 + TOL), -half * (1 - TOL)),
                (-np.inf, 0.0),
                strict=True,
                basis=BASIS,
            ),
            compute=along(scaling_slope(binary, "k"), "log k at fixed d (the sweep)"),
            sources=("scaling",),
            applies=scaling_applies("k"),
        ),
        Claim(
            id="fa.scaling_slope_d",
            form=ASYMPTOTIC,
            setting="scaling sweep over d, 2-class nets",
            claim="The 2-class net's critical radius follows sqrt(d/k) as d grows at fixed k.",
            citation=_citation(""),
            derivation="Strong (P2, the theory's constant +-10 %): a radius proportional to "
            "sqrt(d/k) has slope 1/2 in log d: [0.45, 0.55]. Weak (the same direction): the "
            "radius grows with d, slope > 0. Judged as a trend over the whole sweep.",
            paper="slope 1/2 in log d (theory sqrt(d/k))",
            measure="the least-squares slope of log critical radius on log d over the sweep, "
            "common to the seeds with an intercept per seed",
            rule=between(
                "slope",
                (half * (1 - TOL), half * (1 + TOL)),
                (0.0, np.inf),
                strict=True,
                basis=BASIS,
            ),
            compute=along(scaling_slope(binary, "d"), "log d at fixed k (the sweep)"),
            sources=("scaling",),
            applies=scaling_applies("d"),
        ),
    ]
