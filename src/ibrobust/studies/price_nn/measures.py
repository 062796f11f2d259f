"""Study PRICE-NN's claim measurements (the catalog: ``claims.yaml`` beside this module, read
by :mod:`ibrobust.claims.declared`; :data:`MEASURES` names the measures it calls,
:data:`CONTEXT` the functions of the configuration it reads: the grid of each half, whether
the study has the half and whether its grid can test a claim).

They read ``results/<study>/figures/cells.csv``
(:func:`ibrobust.studies.price_nn.tables.cells_table`): one row per (arch, n, eps, seed) with
both algorithms' final numbers side by side (``gd_*`` and ``sd_*``): robust test accuracy
(the worst case of the final attack set at the training eps, top-1 for the 10-class CNN),
clean test accuracy, robust train accuracy under the training PGD, whether the run fitted
(CNN: reached its train-loss threshold, the paper's reporting time; FC: 100 % robust train
accuracy), the robust test accuracy of its evaluation curve at the end and at its best point
(training PGD), and its late train-loss instability. Differences are in accuracy points,
paired by seed (the same training subset and initialisation seed), judged only on the seeds
where both algorithms fitted.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ibrobust.claims.core import (
    Column,
    Measurement,
    NotRun,
    Source,
    StudyContext,
    pooled_slope,
)
from ibrobust.claims.declared import fixed
from ibrobust.studies.price_nn import algorithm

ALGS = ("gd", "sd")
FIELDS = ("robust_test", "clean_test", "robust_train", "robust_test_end", "robust_test_best",
          "late_increase")  # fmt: skip
SOURCES: dict[str, Source] = {
    "cells": Source(
        path="figures/cells.csv",
        keys={"arch": ("fc", "cnn")},
        numeric=(
            Column("n", lo=1),
            Column("eps", lo=0, hi=1),
            Column("seed", lo=0),
            *(Column(f"{a}_{f}", lo=0, hi=1, nan_ok=True) for a in ALGS for f in FIELDS),
            *(Column(f"{a}_fitted", lo=0, hi=1) for a in ALGS),
            *(Column(f"{a}_epochs", lo=0, nan_ok=True) for a in ALGS),
            *(Column(f"{a}_attack_points", lo=1, nan_ok=True, required=False) for a in ALGS),
        ),
        built_by="the study's target (snakemake price_nn; not in the default target)",
    ),
}
POINTS = 100.0  # differences in accuracy points
PAPER_FC_GAP = 4.11  # Sec. 5.2: SD - GD, mean over 3 seeds
TOL = 0.10  # docs/studies/README.md, rule P2
EQUIV = (1.0, 3.0)  # rule P4 in points


# ---- selections ------------------------------------------------------------------------------
def _rows(df: pd.DataFrame, arch: str, robust: bool | None = None) -> pd.DataFrame:
    sel = df[df["arch"] == arch]
    if robust is not None:
        sel = sel[sel["eps"] > 0] if robust else sel[sel["eps"] == 0]
    if sel.empty:
        raise NotRun(
            f"no {arch} rows" + ("" if robust is None else f" at eps {'> 0' if robust else '0'}")
        )
    return sel


def _fitted(sel: pd.DataFrame) -> pd.DataFrame:
    return sel[(sel["gd_fitted"] > 0.5) & (sel["sd_fitted"] > 0.5)]


def _points(sel: pd.DataFrame) -> int | None:
    """The test points the strong attacks ran on, as measured (``<alg>_attack_points``, the
    fewest over the rows and algorithms), not the config's attack_points; None for cells
    written before the column."""
    cols = [f"{a}_attack_points" for a in ALGS if f"{a}_attack_points" in sel]
    counts = sel[cols].stack().dropna() if cols else pd.Series(dtype=float)
    return int(counts.min()) if len(counts) else None


def _diff(sel: pd.DataFrame, field: str, first: str) -> pd.Series:
    """``first`` minus the other algorithm's ``field``, in points."""
    other = "sd" if first == "gd" else "gd"
    return POINTS * (sel[f"{first}_{field}"] - sel[f"{other}_{field}"])


def _seeds(values: pd.Series, sel: pd.DataFrame, note: str, ctx, half) -> Measurement:
    labels = tuple(f"seed {int(s)}" for s in sel["seed"])
    return Measurement(
        tuple(float(v) for v in values), labels=labels, note=note, points=_points(sel)
    )


def _fit_note(all_: pd.DataFrame, fitted: pd.DataFrame) -> str:
    return f"{len(fitted)} of {len(all_)} seeds with both algorithms fitted"


def _rates(ctx: StudyContext, half: str) -> str:
    """The half's learning rates from the config, e.g. "GD lr 0.05, SD lr 0.0005" (the paper
    trains its FC net at one rate for both; the ledger says where the study does not)."""
    names = (ctx.config.get(half) or {}).get("optimizers", [])
    opts = [ctx.optimizers[n] for n in names if n in ctx.optimizers]
    lr = {algorithm(o).upper(): o.get("lr") for o in opts}
    if set(lr) != {"GD", "SD"}:
        return ""
    if lr["GD"] == lr["SD"]:
        return f"GD and SD at lr {lr['GD']:g}"
    return f"GD lr {lr['GD']:g}, SD lr {lr['SD']:g}"


def _fc_note(ctx: StudyContext, fitted: str) -> str:
    """An FC row's note: how many seeds it stands on, and the rates (:func:`_rates`)."""
    return "; ".join(p for p in (fitted, _rates(ctx, "fc")) if p)


# ---- measurements: the CNN ---------------------------------------------------------------------
def cnn_cell(n: int, eps: float):
    """Per seed where both fitted: GD - SD robust test accuracy (points) in one cell."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        sel = _rows(src["cells"], "cnn", True)
        sel = sel[(sel["n"] == n) & ((sel["eps"] - eps).abs() < 1e-9)]
        fit = _fitted(sel)
        if fit.empty:
            raise NotRun(f"no seed of cell n={n}, eps={eps:g} where both algorithms fitted")
        return _seeds(_diff(fit, "robust_test", "gd"), fit, _fit_note(sel, fit), ctx, "cnn")

    return compute


def cnn_trend(variable: str):
    """The least-squares slope of GD - SD (points) on ``variable`` (log n, or eps) over the
    fitted robust-ERM cells, with an intercept per (seed, other variable): the within-cell
    trend of a two-way layout, not two hand-picked cells."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        robust = _rows(src["cells"], "cnn", True)
        corner = (robust["n"] == robust["n"].max()) & (
            (robust["eps"] - robust["eps"].max()).abs() < 1e-9
        )
        fit = _fitted(robust[~corner])  # the paper's SD-instability cell: left out, declared
        if fit.empty:
            raise NotRun("no fitted CNN cell at eps > 0")
        other = "eps" if variable == "n" else "n"
        x = np.log(fit["n"].to_numpy(float)) if variable == "n" else fit["eps"].to_numpy(float)
        groups = np.array(
            [f"seed {int(s)}, {other} {v:g}" for s, v in zip(fit["seed"], fit[other], strict=True)]
        )
        return pooled_slope(x, _diff(fit, "robust_test", "gd").to_numpy(), groups,
                            "(cell, seed) pairs", group_name="(seed, row)",
                            along="log n" if variable == "n" else "eps")  # fmt: skip

    return compute


def cnn_robust_over_erm(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """At the smallest n, per seed: the mean over the fitted eps > 0 cells of GD - SD robust
    test accuracy minus GD - SD clean test accuracy under ERM (eps 0)."""
    df = _rows(src["cells"], "cnn")
    n0 = int(df["n"].min())
    vals, labels, fitted = _robust_minus_erm(df[df["n"] == n0], "gd", f" with n = {n0}")
    points = _points(df[df["n"] == n0])
    return Measurement(vals, labels=labels, note=f"n = {n0}; {fitted}", points=points)


def cnn_instability(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """In the largest (n, eps) cell, per seed: SD's late train-loss instability (the fraction
    of the last half of its logged steps whose train loss rose) minus GD's."""
    df = _rows(src["cells"], "cnn", True)
    cell = df[(df["n"] == df["n"].max()) & ((df["eps"] - df["eps"].max()).abs() < 1e-9)]
    cell = cell.dropna(subset=["sd_late_increase", "gd_late_increase"])
    if cell.empty:
        raise NotRun("no instability record in the largest (n, eps) cell")
    vals = cell["sd_late_increase"] - cell["gd_late_increase"]
    return _seeds(
        vals, cell, f"n = {int(cell['n'].iloc[0])}, eps = {cell['eps'].iloc[0]:g}", ctx, "cnn"
    )


# ---- measurements: the FC net -------------------------------------------------------------------
def fc_robust(eps: float):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        sel = _rows(src["cells"], "fc", True)
        sel = sel[(sel["eps"] - eps).abs() < 1e-9]
        fit = _fitted(sel)
        if fit.empty:
            raise NotRun(f"no FC seed at eps {eps:g} where both algorithms fitted")
        note = _fc_note(ctx, _fit_note(sel, fit))
        return _seeds(_diff(fit, "robust_test", "sd"), fit, note, ctx, "fc")

    return compute


def fc_erm(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    sel = _rows(src["cells"], "fc", False)
    fit = _fitted(sel)
    if fit.empty:
        raise NotRun("no FC seed under ERM where both algorithms fitted")
    note = _fc_note(ctx, _fit_note(sel, fit))
    return _seeds(_diff(fit, "clean_test", "sd"), fit, note, ctx, "fc")


def fc_robust_over_erm(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    df = _rows(src["cells"], "fc")
    vals, labels, fitted = _robust_minus_erm(df, "sd", "")
    note = _fc_note(ctx, fitted)
    return Measurement(vals, labels=labels, note=note, points=_points(df))


def _robust_minus_erm(df: pd.DataFrame, ahead: str, where: str) -> tuple[tuple, tuple, str]:
    """Per seed fitted both under robust ERM and under ERM: the mean over the fitted eps > 0
    cells of the ``ahead`` algorithm's robust test accuracy edge minus its clean test
    accuracy edge under ERM (eps 0), in points; with the labels "seed <s>" and a note of how
    many seeds of the half that is."""
    rob = (
        _fitted(df[df["eps"] > 0])
        .groupby("seed")
        .apply(lambda g: _diff(g, "robust_test", ahead).mean())
    )
    erm = _fitted(df[df["eps"] == 0]).set_index("seed")
    if rob.empty or erm.empty:
        raise NotRun(f"no seed fitted both under ERM and under robust ERM{where}")
    erm_d = _diff(erm, "clean_test", ahead)
    seeds = rob.index.intersection(erm_d.index)
    vals = rob[seeds] - erm_d[seeds]
    note = f"{len(seeds)} of {df['seed'].nunique()} seeds with both fitted under ERM and robust ERM"
    return tuple(float(v) for v in vals), tuple(f"seed {int(s)}" for s in seeds), note


def fc_overfitting(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Per fitted seed under robust ERM: GD's robust overfitting (the best robust test
    accuracy of its evaluation curve minus the curve's last point: the same attack, the
    training PGD, on the same evaluation points) minus SD's, in points."""
    curve = [f"{a}_robust_test_{p}" for a in ALGS for p in ("best", "end")]
    sel = _fitted(_rows(src["cells"], "fc", True)).dropna(subset=curve)
    if sel.empty:
        raise NotRun("no fitted FC seed with evaluation curves under robust ERM")
    over = {a: POINTS * (sel[f"{a}_robust_test_best"] - sel[f"{a}_robust_test_end"]) for a in ALGS}
    robust = _rows(src["cells"], "fc", True)
    note = _fc_note(ctx, _fit_note(robust, sel))
    return _seeds(over["gd"] - over["sd"], sel, note, ctx, "fc")


def needs_half(ctx: StudyContext, half: str) -> str | None:
    """``applies``: the claim is not run when the study has no such half (a scale rung)."""
    return None if ctx.config.get(half) else f"the study has no {half} half"


def grid_lacks(
    ctx: StudyContext, half: str, *, ns: int = 1, robust_eps: int = 1, erm: bool = False
) -> str | None:
    """``not_applicable``: why the half's grid cannot test the claim by construction (fewer
    than ``ns`` training-set sizes, fewer than ``robust_eps`` radii > 0, no eps = 0 when
    ``erm``), or None. A half the study lacks is ``needs_half``'s (not run)."""
    part = ctx.config.get(half)
    if not part:
        return None
    n_count = len(set(part.get("n_train") or ()))
    eps = [float(e) for e in part.get("eps") or ()]
    robust = len({e for e in eps if e > 0})
    if n_count < ns:
        return f"the {half} grid has {n_count} training-set size(s): a trend in n needs {ns}"
    if robust < robust_eps:
        return f"the {half} grid has {robust} radius(es) eps > 0: the claim needs {robust_eps}"
    if erm and 0.0 not in eps:
        return f"the {half} grid has no eps = 0: the claim compares with plain ERM"
    return None


def grid_n(ctx: StudyContext, half: str) -> list[int]:
    """The half's training-set sizes, in the config's order."""
    return [int(n) for n in (ctx.config.get(half) or {}).get("n_train", [])]


def robust_eps(ctx: StudyContext, half: str) -> list[float]:
    """The half's robust-ERM radii (eps > 0), in the config's order."""
    return [float(e) for e in (ctx.config.get(half) or {}).get("eps", []) if float(e) > 0]


def seed_count(ctx: StudyContext, half: str) -> int:
    """The half's configured seeds (a claim's setting and derivation say over how many)."""
    return len((ctx.config.get(half) or {}).get("seeds") or ())


MEASURES = {
    "cnn_cell": cnn_cell,
    "cnn_trend": cnn_trend,
    "cnn_robust_over_erm": fixed(cnn_robust_over_erm),
    "cnn_instability": fixed(cnn_instability),
    "fc_robust": fc_robust,
    "fc_erm": fixed(fc_erm),
    "fc_robust_over_erm": fixed(fc_robust_over_erm),
    "fc_overfitting": fixed(fc_overfitting),
}
CONTEXT = {"needs_half": needs_half, "grid_lacks": grid_lacks, "grid_n": grid_n,
           "robust_eps": robust_eps, "seed_count": seed_count}  # fmt: skip
