"""Study FA's scaling-sweep claims (kind ``feature_averaging``): the 2-class net's critical
radius against k at fixed d and against d at fixed k, from
``results/<study>/figures/critical_radius_scaling.csv`` (source ``scaling`` of
:mod:`ibrobust.studies.feature_averaging.claims`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np
import pandas as pd

from ibrobust.claims.core import Claim, Measurement, NotRun, StudyContext, between
from ibrobust.claims.intervals import slope_interval


def scaling_slope(setting: str, key: str = "k"):
    """The least-squares slope of log(critical radius) on log(``key``) over the sweep: the
    values are the per-seed slopes, the interval is that of the slope common to the seeds,
    fitted to every (value, seed) pair with an intercept per seed (t, pairs - seeds - 1 df;
    :func:`ibrobust.claims.intervals.slope_interval`).
    Values never falling to 50 % on the grid are left out (at least two per seed); 2-class
    nets have one score, so any readout's rows serve."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = src["scaling"]
        df = df[(df["key"] == key) & (df["label"] == setting) & df["critical_radius"].notna()]
        df = df.drop_duplicates(["seed", "dataset"])
        slopes, used = [], []
        for _, g in df.groupby("seed"):
            if g[key].nunique() >= 2:
                slopes.append(float(np.polyfit(np.log(g[key]), np.log(g["critical_radius"]), 1)[0]))
                used.append(g)
        if not slopes:
            raise NotRun(
                f"fewer than two values of {key} with a {setting} critical radius per seed"
            )
        pairs = pd.concat(used)
        x, y = np.log(pairs[key]), np.log(pairs["critical_radius"])
        iv = partial(slope_interval, x, y, f"({key}, seed) pairs", groups=pairs["seed"].to_numpy())
        note = f"{len(slopes)} seeds' slopes {', '.join(f'{v:.3f}' for v in slopes)}"
        return Measurement(tuple(slopes), interval=iv, note=note)

    return compute


def _scaling_applies(key: str):
    def applies(ctx: StudyContext) -> str | None:
        sc = ctx.config.get("scaling")
        if sc is None:
            return "the study has no scaling sweep"
        if key not in sc.get("sweeps", {}):
            return f"the scaling sweeps are over {sorted(sc.get('sweeps', {}))}, not {key}"
        return None

    return applies


# ---- the claims ----------------------------------------------------------------------------


def scaling_claims(binary: str) -> list[Claim]:
    """The sweep claims (``binary``: the 2-class nets' label in critical_radius_scaling.csv)."""
    return [
        Claim(
            id="fa.scaling_slope",
            setting="scaling sweep over k, 2-class nets",
            claim="The 2-class net's critical radius follows sqrt(d/k) as k grows at fixed d.",
            paper="slope -1/2 in log k (theory sqrt(d/k))",
            measure="per seed, the least-squares slope of log critical radius on log k "
            "(critical_radius_scaling.csv; k whose radius is off the grid left out)",
            rule=between("slope", (-0.7, -0.3), (-1.0, -0.1)),
            compute=scaling_slope(binary, "k"),
            sources=("scaling",),
            applies=_scaling_applies("k"),
        ),
        Claim(
            id="fa.scaling_slope_d",
            setting="scaling sweep over d, 2-class nets",
            claim="The 2-class net's critical radius follows sqrt(d/k) as d grows at fixed k.",
            paper="slope 1/2 in log d (theory sqrt(d/k))",
            measure="per seed, the least-squares slope of log critical radius on log d "
            "(critical_radius_scaling.csv; d whose radius is off the grid left out)",
            rule=between("slope", (0.3, 0.7), (0.1, 1.0)),
            compute=scaling_slope(binary, "d"),
            sources=("scaling",),
            applies=_scaling_applies("d"),
        ),
    ]
