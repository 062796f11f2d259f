"""What the price_limit study's limit claims measure (``claims.yaml``): the margin
ratio's trend along training, per run, from ``figures/margin_path.csv`` (the ratio at
checkpoints of the train loss)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ibrobust.claims.core import Measurement, NotRun, StudyContext, trend
from ibrobust.studies.price_linear.measures import EPS_FRACTION, _optimizer

LN10 = float(np.log(10.0))


def margin_slope(path: pd.DataFrame) -> float:
    """The least-squares slope of 1 - margin_ratio on ln(1/L) over one run's checkpoints
    (columns ``log10_loss``, ``margin_ratio``): < 0 when the ratio approaches 1 as the train
    loss L falls. Needs two checkpoints at different losses."""
    x = -path["log10_loss"].to_numpy(float) * LN10
    y = 1.0 - path["margin_ratio"].to_numpy(float)
    if len(x) < 2 or np.ptp(x) == 0:
        raise NotRun("a run has fewer than two checkpoints at different train losses")
    xc = x - x.mean()
    return float(xc @ (y - y.mean()) / (xc @ xc))


def limit_trend(algorithm: str):
    """Per (regime, draw): the mean over n and eps < gamma* of :func:`margin_slope` of the
    ``algorithm``'s runs, over their checkpoints where the data are separated (train loss
    below 1/n, so every point's robust margin is positive and the margin ratio is a
    separator's): a trend along training."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = src["margin_path"]
        opt = _optimizer(ctx, algorithm)
        sel = df[(df["optimizer"] == opt) & (df[EPS_FRACTION] < 1)]
        sel = sel[sel["log10_loss"] < -np.log10(sel["n"].astype(float))]
        if sel.empty:
            raise NotRun(f"no {opt} checkpoint with the data separated (train loss < 1/n)")
        keys = ["dataset", "draw", "n", EPS_FRACTION]
        enough = sel.groupby(keys)["log10_loss"].transform("nunique") >= 2
        runs, short = sel[enough].groupby(keys), sel[~enough].groupby(keys).ngroups
        if not runs.ngroups:
            raise NotRun(f"no {opt} run has two separated checkpoints at different losses")
        slopes = runs.apply(margin_slope, include_groups=False).rename("slope").reset_index()
        per = slopes.groupby(["dataset", "draw"])["slope"].mean()
        labels = tuple(f"{ds} draw {int(dr)}" for ds, dr in per.index)
        note = f"{len(slopes)} runs" + (
            f"; {short} with fewer than two separated checkpoints left out" if short else ""
        )
        m = Measurement(tuple(float(v) for v in per), unit="(regime, draw) pairs",
                        labels=labels, note=note)  # fmt: skip
        return trend(m, "training: ln(1/L), L the train loss")

    return compute
