"""What the claims of Study PRICE-LIN measure (``claims.yaml`` beside this module declares
them, read by :mod:`ibrobust.claims.declared`): the files read (:data:`SOURCES`), the cells
of the eps grid (:data:`CONSTANTS`, which the file's texts show), per claim one value per
dataset draw or (regime, draw) pair (:data:`MEASURES`), and the functions of the
configuration the file reads (:data:`CONTEXT`: the regimes' datasets, the stopping loss that
decides protocol or limit, the grid's largest robust-ERM fraction).

Our numbers come from ``results/<study>/figures/gap_vs_n.csv`` (every trained problem:
dataset, optimizer, n, draw, eps_fraction, train / test robust and clean accuracy, whether
the run reached the study's stopping loss, its normalised l_inf margin; written by the gap
figure). The *edge* of CD over GD is gap(GD) - gap(CD), paired by dataset draw (the same
training set); a claim averages it over n (and over the robust-ERM cells of the eps grid
where it says so), one value per draw, with a t interval over draws. The eps grid's cells:
eps = 0 is ERM; 0 < eps / gamma* <= :data:`ROBUST_ERM_MAX` are the robust-ERM cells; the
larger fractions (0.9, 0.99 by default) probe the approach to gamma*, where Lemma C.4 makes
every separator max-margin. ``summary.csv`` is checked as before.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ibrobust.claims.core import Column, Measurement, NotRun, Source, StudyContext, per_cell
from ibrobust.claims.declared import fixed
from ibrobust.studies.price_linear.algorithms import algorithm_of

GAP = "robust_gap"
MEAN, STD = "{}_mean", "{}_std"
EPS_FRACTION = "eps_fraction"
ROBUST_ERM_MAX = 0.75  # robust-ERM cells: 0 < eps/gamma* <= this; above: the approach to gamma*
FIG1_FRACTION = 0.5  # Fig. 1 (bottom)'s robust-ERM eps is lost: the middle robust-ERM cell
NEAR_MIN = 0.95  # "near gamma*": the approach cell must be at least this fraction of it

SOURCES: dict[str, Source] = {
    "summary": Source(
        path="figures/summary.csv",
        keys={"dataset": None, "optimizer": None},
        numeric=(
            Column(EPS_FRACTION, lo=0, hi=1),
            Column("n", lo=1),
            Column(MEAN.format(GAP), lo=-1, hi=1),
            Column(STD.format(GAP), lo=0, hi=1, nan_ok=True),  # NaN for a single draw
            Column(MEAN.format("test_robust_acc"), lo=0, hi=1),
            Column(MEAN.format("train_robust_acc"), lo=0, hi=1),
        ),
        checks=(
            lambda df: (
                None
                if np.allclose(
                    df[MEAN.format(GAP)],
                    df[MEAN.format("train_robust_acc")] - df[MEAN.format("test_robust_acc")],
                    atol=1e-6,
                )
                else "column 'robust_gap_mean' is not train_robust_acc_mean - test_robust_acc_mean"
            ),
        ),
        built_by="the study's target (and the default target)",
    ),
    "problems": Source(
        path="figures/gap_vs_n.csv",
        keys={"dataset": None, "optimizer": None},
        numeric=(
            Column(EPS_FRACTION, lo=0, hi=1),
            Column("n", lo=1),
            Column("draw", lo=0),
            Column("train_robust_acc", lo=0, hi=1),
            Column("test_robust_acc", lo=0, hi=1),
            Column("train_clean_acc", lo=0, hi=1, required=False),
            Column("test_clean_acc", lo=0, hi=1, required=False),
            Column("converged", lo=0, hi=1, required=False),
            Column("margin_ratio", required=False),
        ),
        built_by="the study's target (and the default target)",
    ),
}


# ---- selections ------------------------------------------------------------------------------
def _optimizer(ctx: StudyContext, algorithm: str) -> str:
    for name in ctx.config["optimizers"]:
        if algorithm_of(ctx.optimizers[name]) == algorithm:
            return name
    raise NotRun(f"the study runs no {algorithm} optimizer")


def regimes(ctx: StudyContext) -> dict[str, str]:
    """The study's datasets by sparsity regime: ``dense/dense``, ``sparse w*`` (sparse teacher,
    dense x: paper Fig. 2 left), ``sparse x`` (dense teacher, sparse x: Fig. 5 top),
    ``sparse/sparse``; the first dataset of each."""
    out: dict[str, str] = {}
    for ds in ctx.config["datasets"]:
        c = ctx.datasets[ds]
        d, kw, kx = int(c["d"]), int(c["k_w"]), int(c["k_x"])
        name = {
            (True, True): "dense/dense",
            (False, True): "sparse w*",
            (True, False): "sparse x",
            (False, False): "sparse/sparse",
        }[(kw == d, kx == d)]
        out.setdefault(name, ds)
    return out


def fractions(df: pd.DataFrame, which: str) -> list[float]:
    """The grid's eps fractions of one kind: ``erm`` (0), ``robust`` (0 < f <= ROBUST_ERM_MAX),
    ``near`` (the largest below 1: the approach to gamma*; at least NEAR_MIN of it),
    ``fig1`` (FIG1_FRACTION, the declared cell of Fig. 1)."""
    grid = sorted({round(float(f), 9) for f in df[EPS_FRACTION]})
    if which == "erm":
        return [f for f in grid if f == 0]
    if which == "robust":
        return [f for f in grid if 0 < f <= ROBUST_ERM_MAX]
    if which == "fig1":
        return [f for f in grid if abs(f - FIG1_FRACTION) < 1e-9]
    below = [f for f in grid if ROBUST_ERM_MAX < f < 1]
    if below and below[-1] < NEAR_MIN:
        raise NotRun(
            f"the grid's largest eps below gamma* is {below[-1]:g} gamma* (< {NEAR_MIN:g})"
        )
    return below[-1:]


def _edges(
    df: pd.DataFrame, dataset: str, first: str, second: str, fracs: list[float],
    gap: str = "robust", converged: bool = False,
) -> pd.DataFrame:  # fmt: skip
    """(eps_fraction, n, draw) -> gap(first) - gap(second) on ``dataset`` (paired by draw) at
    the given fractions; ``gap`` robust or clean; ``converged``: only problems where both
    runs reached the stopping loss."""
    if not fracs:
        raise NotRun("the eps grid has no such cell")
    sel = df[(df["dataset"] == dataset) & df[EPS_FRACTION].round(9).isin(fracs)]
    gaps, ok = {}, {}
    for opt in (first, second):
        g = sel[sel["optimizer"] == opt].set_index([EPS_FRACTION, "n", "draw"])
        if g.empty:
            raise NotRun(f"no rows for {opt} on {dataset} at eps/gamma* in {fracs}")
        if g.index.duplicated().any():
            raise ValueError(f"several rows per (eps, n, draw) for {opt} on {dataset}")
        gaps[opt] = g[f"train_{gap}_acc"] - g[f"test_{gap}_acc"]
        ok[opt] = g["converged"] > 0.5 if "converged" in g else pd.Series(True, index=g.index)
    both = gaps[first].index.intersection(gaps[second].index)
    if converged:
        both = both[(ok[first][both] & ok[second][both]).to_numpy()]
    if both.empty:
        what = " where both reached the stopping loss" if converged else ""
        raise NotRun(f"{first} and {second} share no (eps, n, draw) on {dataset}{what}")
    return (gaps[first][both] - gaps[second][both]).rename("edge").reset_index()


def _per_draw(edges: pd.DataFrame) -> pd.Series:
    """Mean over n (and eps cells) of the edge, one value per draw."""
    return edges.groupby(["draw", EPS_FRACTION])["edge"].mean().groupby("draw").mean()


def _draws(values: pd.Series, note: str = "") -> Measurement:
    labels = tuple(f"draw {int(d)}" for d in values.index)
    return Measurement(tuple(float(v) for v in values), unit="draws", labels=labels, note=note)


# ---- measurements ----------------------------------------------------------------------------
def robust_edge(regime: str, algorithm: str = "cd", cells: str = "robust", gap: str = "robust"):
    """Per draw: the mean over n and the ``cells`` fractions of gap(GD) - gap(``algorithm``)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = regimes(ctx)[regime]
        df = src["problems"]
        e = _edges(df, ds, _optimizer(ctx, "gd"), _optimizer(ctx, algorithm),
                   fractions(df, cells), gap)  # fmt: skip
        return _draws(_per_draw(e))

    return compute


def edge_cells(regime: str):
    """One cell per robust-ERM eps of ``regime`` (as the paper's Fig. 2 right summarises each
    (sparsity, eps) combination into one number): per draw the edge gap(GD) - gap(CD), mean
    over n; the eps = 0 (ERM) cell's edge, not a case of the claim, in the note."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = regimes(ctx)[regime]
        df = src["problems"]
        gd, cd = _optimizer(ctx, "gd"), _optimizer(ctx, "cd")
        cells = []
        for f in fractions(df, "robust"):
            e = _edges(df, ds, gd, cd, [f])
            cells.append((f"eps = {f:g} gamma*", _draws(_per_draw(e))))
        erm = _draws(_per_draw(_edges(df, ds, gd, cd, fractions(df, "erm"))))
        iv = erm.ci()
        shown = f" [{iv.lo:+.3g}, {iv.hi:+.3g}]" if iv is not None else ""
        note = f"eps = 0 (ERM, not a case of the claim): {erm.mean:+.3g}{shown} over {erm.n} draws"
        return per_cell(cells, note=note)

    return compute


def edge_change(regime: str, start: str, end: str, sign: float = 1.0):
    """Per draw: sign x [mean edge over the ``end`` cells - mean edge over the ``start``
    cells] (GD - CD, robust gaps, mean over n): the rise from ERM (start erm, end robust)
    or the fall toward gamma* (start near, end robust, sign +1: robust minus near)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = regimes(ctx)[regime]
        df = src["problems"]
        gd, cd = _optimizer(ctx, "gd"), _optimizer(ctx, "cd")
        a = _per_draw(_edges(df, ds, gd, cd, fractions(df, start)))
        b = _per_draw(_edges(df, ds, gd, cd, fractions(df, end)))
        draws = a.index.intersection(b.index)
        return _draws(sign * (b[draws] - a[draws]))

    return compute


def small_n_edge(regime: str):
    """Per draw: the edge at the grid's smallest n, in the declared Fig. 1 cell."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = regimes(ctx)[regime]
        df = src["problems"]
        e = _edges(df, ds, _optimizer(ctx, "gd"), _optimizer(ctx, "cd"), fractions(df, "fig1"))
        n0 = int(e["n"].min())
        return _draws(_per_draw(e[e["n"] == n0]), note=f"n = {n0}")

    return compute


def near_margin_edge(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Per (regime, draw): the signed edge GD - CD at the grid's largest fraction below 1,
    mean over the n where both runs reached the stopping loss."""
    df = src["problems"]
    gd, cd = _optimizer(ctx, "gd"), _optimizer(ctx, "cd")
    near = fractions(df, "near")
    vals, labels, skipped = [], [], []
    for name, ds in regimes(ctx).items():
        try:
            e = _edges(df, ds, gd, cd, near, converged=True)
        except NotRun:
            skipped.append(name)
            continue
        for draw, v in _per_draw(e).items():
            vals.append(float(v))
            labels.append(f"{name} draw {int(draw)}")
    if not vals:
        raise NotRun(f"no regime where GD and CD both reached the stopping loss at {near}")
    note = f"eps = {near[0]:g} gamma*" + (
        f"; no converged pair in {', '.join(skipped)}" if skipped else ""
    )
    return Measurement(tuple(vals), unit="(regime, draw) pairs", labels=tuple(labels), note=note)


def limit_margin(algorithm: str):
    """Per (regime, draw): the mean over n and eps < gamma* of the normalised l_inf margin
    min_i y_i <w, x_i> / (||w||_1 gamma*) of the runs that reached the stopping loss."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        df = src["problems"]
        if "margin_ratio" not in df or "converged" not in df:  # older outputs
            raise NotRun("the table has no margin_ratio / converged columns")
        opt = _optimizer(ctx, algorithm)
        sel = df[(df["optimizer"] == opt) & (df[EPS_FRACTION] < 1) & (df["converged"] > 0.5)]
        if sel.empty:
            raise NotRun(f"no {opt} run reached the stopping loss")
        per = sel.groupby(["dataset", "draw"])["margin_ratio"].mean()
        labels = tuple(f"{ds} draw {int(dr)}" for ds, dr in per.index)
        return Measurement(tuple(float(v) for v in per), unit="(regime, draw) pairs",
                           labels=labels)  # fmt: skip

    return compute


# ---- what the claim file reads from the configuration (CONTEXT) ---------------------------
LIMIT_LOSS = 1e-10  # a study stopping below this train loss trains to the limit (price_limit)


def stops_at(ctx: StudyContext) -> float:
    return float(ctx.config["stopping"]["loss_threshold"])


def limit_only(ctx: StudyContext) -> str | None:
    """``not_applicable`` of the limit claims: a study that stops at the paper's protocol."""
    if stops_at(ctx) >= LIMIT_LOSS:
        return (
            f"the study stops at train loss {stops_at(ctx):g} (the paper's protocol), where "
            "the normalised margin is still about log(n) / log(1/(n L)) from its t -> inf "
            "limit; the limit is judged in a study trained to a loss below "
            f"{LIMIT_LOSS:g} (configs: study price_limit)"
        )
    return None


def protocol_only(ctx: StudyContext) -> str | None:
    """``not_applicable`` of the protocol claims: they need the paper's stopping rule (a
    common, moderate train loss)."""
    if stops_at(ctx) < LIMIT_LOSS:
        return (
            f"the study trains to the limit (stopping loss {stops_at(ctx):g} < {LIMIT_LOSS:g}); "
            "the paper's generalization claims are judged in studies that stop at its "
            "protocol's common train loss"
        )
    return None


def needs_regime(ctx: StudyContext, regime: str) -> str | None:
    """``applies``: not run in a study without a dataset of that sparsity regime."""
    return None if regime in regimes(ctx) else f"the study has no {regime} regime"


def regime_name(ctx: StudyContext, regime: str, default: str | None = None) -> str:
    """The study's dataset of a sparsity regime (:func:`regimes`), else ``default`` (else
    the regime's own name): a claim's setting."""
    return regimes(ctx).get(regime, regime if default is None else default)


def robust_max(ctx: StudyContext) -> float:
    """The grid's largest robust-ERM fraction eps/gamma* (<= :data:`ROBUST_ERM_MAX`; 0 with
    none): robust separation at every robust-ERM cell needs margin_ratio >= it."""
    fractions = (float(f) for f in ctx.config["eps_fractions"])
    return max((f for f in fractions if f <= ROBUST_ERM_MAX), default=0.0)


MEASURES = {
    "robust_edge": robust_edge,
    "edge_cells": edge_cells,
    "edge_change": edge_change,
    "small_n_edge": small_n_edge,
    "near_margin_edge": fixed(near_margin_edge),
    "limit_margin": limit_margin,
}
CONTEXT = {
    "protocol_only": protocol_only,
    "limit_only": limit_only,
    "needs_regime": needs_regime,
    "regime_name": regime_name,
    "robust_max": robust_max,
}
CONSTANTS = {"robust_erm_max": ROBUST_ERM_MAX, "fig1_fraction": FIG1_FRACTION, "near_min": NEAR_MIN}
