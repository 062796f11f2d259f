"""The measures of Study FA's scaling-sweep lambda claims (:mod:`ibrobust.studies.
feature_averaging.claims_lambda`): a column of ``critical_radius_scaling.csv`` (per run, its
final checkpoint's value) as a slope on ln d over the sweep, and the base cell's number shown
as a diagnostic where the sweep does not record the column."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from ibrobust.claims.core import Measurement, NotRun, StudyContext, pooled_slope, trend
from ibrobust.studies.feature_averaging.measures import SETTING, SOURCES, d_and_k


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
