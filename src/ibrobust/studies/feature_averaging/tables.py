"""Study FA's summary table: per (setting, readout, seed) the critical radii, clean accuracy,
the k-class nets' accuracy on the cluster labels (fine_acc), averaging index and coefficients of the lambda decomposition and the same-class cosine; 2-class
and reference nets have one score, so their rows repeat under each binary readout."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ibrobust.analysis.readoff import grid_bracket
from ibrobust.stages.tables import mean_std, per_readout

RUN_KEY = ("dataset", "model", "optimizer", "supervision", "seed")
GROUP = ["dataset", "model", "optimizer", "readout", "setting"]
NUMERIC_PREFIXES = ("critical", "clean", "fine_", "fa_", "other_", "residual", "cosine")
FINE_ACC = "test.fine_acc"  # the training job's metrics.json key of the k-class nets' argmax
# accuracy on the k cluster labels (rule train)
# the read-off bracket of a critical radius (columns <radius column><LO> / <HI>): the radius
# grid's cell it is interpolated in, or the bisection's bracket where it was refined (rule
# fa_refine); NaN where the radius never fell to the level on the grid (censored)
# and the refined radius itself (<radius column><REFINED>, the bracket's midpoint; NaN where
# not refined: the grid's interpolated radius is the column itself)
LO, HI, REFINED = ".lo", ".hi", ".refined"


def radius_bracket(radii: Sequence[float], value: float, refined: Mapping | None = None):
    """(lo, hi) of a critical radius read off ``radii``: ``refined``'s bisected bracket
    (a refined.json) where given, else the grid cell (:func:`ibrobust.analysis.readoff.
    grid_bracket`); (NaN, NaN) for a censored (NaN) radius, or without the grid (a summary
    from before it was written: the ledger then reads the config's grid)."""
    if refined is not None:
        return float(refined["critical_radius_lo"]), float(refined["critical_radius_hi"])
    if value is None or not math.isfinite(float(value)) or len(radii) == 0:  # no grid: unknown
        return math.nan, math.nan
    return grid_bracket([float(r) for r in radii], float(value))


def summary_table(
    attack: Sequence[dict],
    analysis: Sequence[dict],
    decomposition: Sequence[dict],
    labels: Mapping[str, str | None],
    readouts: Sequence[str],
    *,
    refined: Sequence[dict] = (),
    metrics: Sequence[dict] = (),
) -> pd.DataFrame:
    """One row per attacked run and readout. ``attack``, ``analysis``, ``decomposition``,
    ``metrics`` (the trained nets' metrics.json): the runs' result dicts tagged with their
    wildcards (:data:`RUN_KEY`); ``labels``: model -> its kind's label (None: the row is
    named by its supervision); ``refined``: the refined.json of rule fa_refine, tagged with
    the run's wildcards and ``radius`` (the column refined: worst or an attack). Each
    critical radius has its read-off bracket (:data:`LO`, :data:`HI`,
    :func:`radius_bracket`). ``fine_acc``: a run's :data:`FINE_ACC` (NaN where it has none:
    2-class nets, the reference)."""
    ref = {(*_key(r), r["radius"]): r for r in refined}
    ana = {_key(r): r for r in analysis}
    fine_acc = {_key(r): r[FINE_ACC] for r in metrics if r.get(FINE_ACC) is not None}
    dec = {_key(r): r for r in decomposition}
    rows = []
    for r in attack:
        key = _key(r)
        row = {
            "dataset": r["dataset"], "model": r["model"], "optimizer": r["optimizer"],
            "seed": r["seed"], "readout": r["readout"],
            "setting": labels[r["model"]] or r["supervision"], "clean_acc": r["clean_acc"],
            "n_points": r.get("n_points"),  # the test points attacked (measured)
        }  # fmt: skip
        for a, v in r["critical_radius"].items():
            fine = ref.get((*key, a))
            lo, hi = radius_bracket(r.get("radii") or [], v, fine)
            row.update({f"critical_radius.{a}": v, f"critical_radius.{a}{LO}": lo,
                        f"critical_radius.{a}{HI}": hi,
                        f"critical_radius.{a}{REFINED}": math.nan if fine is None
                        else float(fine["critical_radius"])})  # fmt: skip
        row["fine_acc"] = float(fine_acc.get(key, math.nan))
        if key in dec:
            row.update(
                fa_index=dec[key]["fa_index_final"],
                other_class_ratio=dec[key].get("other_class_ratio_final", float("nan")),
                other_class_slope=checkpoint_slope(
                    dec[key].get("trajectory", []), "other_class_ratio_mean"
                ),
                residual_max=dec[key]["residual_max"],
            )
        if key in ana:
            row["cosine_same_class_mean"] = ana[key]["cosine_same_class_mean"]
        rows.append(row)
    return per_readout(pd.DataFrame(rows), list(readouts))


def checkpoint_slope(trajectory: Sequence[Mapping], key: str) -> float:
    """The least-squares slope of ``key`` on log10 step over a run's checkpoints (the
    decomposition's trajectory, steps > 0, finite values): how the quantity moves along
    training (e.g. the other-class ratio's, which an o(1) claim needs falling). NaN with
    fewer than two such checkpoints."""
    pts = [(math.log10(t["step"]), float(t[key])) for t in trajectory
           if t["step"] > 0 and math.isfinite(float(t.get(key, math.nan)))]  # fmt: skip
    if len({x for x, _ in pts}) < 2:
        return math.nan
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def summary_means(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds of the numeric columns of :func:`summary_table` per setting
    and readout."""
    num = [c for c in table.columns if c.startswith(NUMERIC_PREFIXES)]
    return mean_std(table, GROUP, num)


def summary_markdown(means: pd.DataFrame) -> str:
    """summary.md: :func:`summary_means` (rounded to 3 digits) under what its columns mean."""
    return (
        "# Summary (mean and std over seeds; n = seeds)\n\n"
        "critical_radius.worst = the worst case over the attacks of that readout; 2-class "
        "and reference nets have one score, so their rows repeat under each readout.\n\n"
        + means.round(3).to_markdown(index=False)
        + "\n"
    )


def _key(r: dict) -> tuple:
    return tuple(r[k] for k in RUN_KEY)
