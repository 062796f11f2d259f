"""Study FA's critical-radius sweeps: the per-run table and the fitted log-log slopes.

Each sweep varies one dataset key (k at fixed d, d at fixed k, ...) of a base clusters
dataset; each attacked net (2-class, k-class under each binary readout, robust reference)
has one critical radius per value (50 % point of the worst case over attacks of its
readout). Theory lines: sqrt(d/k) (2-class GD, Li et al.), sqrt(d)/2 and sqrt(d/2). Where
the sweep's nets are decomposed (``scaling.decompose``), each row carries its net's final-
checkpoint lambda quantities (:data:`LAMBDA_COLUMNS`), NaN where the decomposition is not
defined (n_train > d) or does not apply (the reference).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ibrobust.analysis.robustness import critical_radius
from ibrobust.studies.feature_averaging.tables import HI, LO, REFINED, radius_bracket

RUN = ["dataset", "model", "optimizer", "supervision", "seed", "readout"]
# column of the table <- key of the net's decomposition summary (rule decompose)
LAMBDA_COLUMNS = {
    "fa_index": "fa_index_final",
    "other_class_ratio": "other_class_ratio_final",
    "decoupling_ratio": "decoupling_ratio_final",
}


def scaling_table(
    curves: pd.DataFrame,
    datasets: Mapping[str, Mapping],
    sweeps: Mapping[str, list[str]],
    model_labels: Mapping[str, str | None],
    *,
    refined: Sequence[Mapping] = (),
    decompositions: Sequence[Mapping] | None = None,
) -> pd.DataFrame:
    """One row per (swept key, run, readout): the value of the key, d, k, the critical
    radius with its read-off bracket (``critical_radius`` + :data:`~ibrobust.studies.
    feature_averaging.tables.LO` / ``HI``: the grid's cell, or the bisected bracket of the
    run's refined worst-case radius in ``refined``, rule fa_refine's refined.worst.json tagged
    with its run, with the refined radius in ``REFINED``) and the theory lines. ``curves``:
    tidy attack tables (``RUN`` + attack, eps, robust_acc); ``sweeps``: key -> the datasets of
    its values (a dataset may be in several sweeps, e.g. the base one); ``model_labels``:
    model -> its kind's label (None: a run is labelled by its supervision);
    ``decompositions``: the decomposed nets' summaries tagged with their run (``RUN`` less
    readout): given, the rows gain :data:`LAMBDA_COLUMNS` (NaN for a run without one, or a
    summary without that key)."""
    fine = {tuple(r[k] for k in RUN[:5]): r for r in refined if r.get("radius", "worst") == "worst"}
    lams = None
    if decompositions is not None:
        lams = {tuple(r[c] for c in RUN[:-1]): r for r in decompositions}
    radii, brackets, refined_r = {}, {}, {}
    for key, g in curves[curves.attack == "worst"].groupby(RUN, sort=False):
        g = g.sort_values("eps")
        radii[key] = critical_radius(g.eps.to_numpy(), g.robust_acc.to_numpy())
        ref = fine.get(key[:5])
        brackets[key] = radius_bracket(g.eps.to_numpy(), radii[key], ref)
        refined_r[key] = float(ref["critical_radius"]) if ref is not None else float("nan")
    rows = []
    for sweep, names in sweeps.items():
        for run, r in radii.items():
            if run[0] not in names:
                continue
            ds = datasets[run[0]]
            d, k = int(ds["d"]), int(ds["k"])
            label = model_labels[run[1]] or run[3]
            rows.append(
                {
                    "key": sweep,
                    **dict(zip(RUN, run, strict=True)),
                    "label": label,
                    "value": ds[sweep],
                    "d": d,
                    "k": k,
                    "critical_radius": r,
                    f"critical_radius{LO}": brackets[run][0],
                    f"critical_radius{HI}": brackets[run][1],
                    f"critical_radius{REFINED}": refined_r[run],
                    "sqrt_d_over_k": (d / k) ** 0.5,
                    "half_sqrt_d": d**0.5 / 2,
                    "sqrt_half_d": (d / 2) ** 0.5,
                }
            )
            if lams is not None:
                dec = lams.get(run[:-1], {})
                rows[-1].update({c: _number(dec.get(k)) for c, k in LAMBDA_COLUMNS.items()})
    return pd.DataFrame(rows)


def _number(v) -> float:
    """A summary's value as a float (NaN for a missing or null one)."""
    return float("nan") if v is None else float(v)


def loglog_slope(x: pd.Series, y: pd.Series) -> float:
    """Least-squares slope of log y on log x over the points with y > 0 (NaN: fewer than two
    distinct x)."""
    ok = y.notna() & (y > 0)
    if ok.sum() < 2 or x[ok].nunique() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok].astype(float)), np.log(y[ok]), 1)[0])


def scaling_slopes(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (key, label, model, optimizer, readout): the least-squares slope of
    log(mean critical radius over seeds) on log(value) (``slope``), the mean and std of the
    per-seed slopes, how many values entered (radii that never fell to 50 % on the grid are
    left out) and the radius at the smallest and largest value."""
    rows = []
    keys = ["key", "label", "model", "optimizer", "readout"]
    for grp, g in table.groupby(keys, sort=False):
        mean = g.groupby("value").critical_radius.mean()
        per_seed = [loglog_slope(s.value, s.critical_radius) for _, s in g.groupby("seed")]
        per_seed = [v for v in per_seed if np.isfinite(v)]
        rows.append(
            {
                **dict(zip(keys, grp, strict=True)),
                "slope": loglog_slope(pd.Series(mean.index), pd.Series(mean.to_numpy())),
                "slope.seed_mean": float(np.mean(per_seed)) if per_seed else float("nan"),
                "slope.seed_std": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else 0.0,
                "values": int(mean.notna().sum()),
                "radius.first": float(mean.iloc[0]),
                "radius.last": float(mean.iloc[-1]),
            }
        )
    return pd.DataFrame(rows)
