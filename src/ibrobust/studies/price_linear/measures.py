"""What the claims of Study PRICE-LIN measure (:mod:`ibrobust.studies.price_linear.claims`
declares them): the files read (:data:`SOURCES`), the cells of the eps grid, and per claim
one value per dataset draw (or per (regime, draw) pair).

Our numbers come from ``results/<study>/figures/gap_vs_n.csv`` (every trained problem:
dataset, optimizer, n, draw, eps_fraction, train / test robust and clean accuracy, whether
the run reached the study's stopping loss, its normalised l_inf margin; written by the gap
figure). The *edge* of CD over GD is gap(GD) - gap(CD), paired by dataset draw (the same
training set); a claim averages it over n (and over the robust-ERM cells of the eps grid
where it says so), one value per draw, with a t interval over draws. The limit claims read
the margin ratio at checkpoints along training (``figures/margin_path.csv``; not written yet).
The eps grid's cells:
eps = 0 is ERM; 0 < eps / gamma* <= :data:`ROBUST_ERM_MAX` are the robust-ERM cells; the
larger fractions (0.9, 0.99 by default) probe the approach to gamma*, where Lemma C.4 makes
every separator max-margin. ``summary.csv`` is checked as before.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ibrobust.claims.core import (
    Column,
    Measurement,
    NotApplicable,
    NotRun,
    Source,
    StudyContext,
    per_cell,
)
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
            Column("iters", lo=0, required=False),
            Column("diverged", lo=0, hi=1, required=False),
        ),
        built_by="the study's target (and the default target)",
    ),
    # the margin ratio at checkpoints along training, one row per (run, checkpoint): what the
    # limit claims' trend needs. No job writes it yet: price_train.py records each run's
    # margin ratio at its stopping point only (metrics.csv; weights.npz holds the final w)
    "margin_path": Source(
        path="figures/margin_path.csv",
        keys={"dataset": None, "optimizer": None},
        numeric=(
            Column(EPS_FRACTION, lo=0, hi=1),
            Column("n", lo=1),
            Column("draw", lo=0),
            Column("log10_loss"),
            Column("margin_ratio"),
        ),
        built_by="no job yet: the trainer records the margin ratio at the stopping point only; "
        "writing it at checkpoints along training (e.g. every decade of the train loss) "
        "means rerunning price_limit's 8 training jobs, 133 CPU-s in the job records "
        "(benchmarks/profiles/reproduce-00e3146.csv)",
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


def growth_cells(regime: str, algorithm: str = "cd"):
    """One cell per robust-ERM eps of ``regime``: per draw, the edge gap(GD) -
    gap(``algorithm``) at that eps minus the edge at eps = 0 (ERM), each a mean over n, paired
    by draw (how much the edge grows from ERM to robust ERM at that eps); the ERM edge in the
    note."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = regimes(ctx)[regime]
        df = src["problems"]
        gd, other = _optimizer(ctx, "gd"), _optimizer(ctx, algorithm)
        erm = _per_draw(_edges(df, ds, gd, other, fractions(df, "erm")))
        cells = []
        for f in fractions(df, "robust"):
            rob = _per_draw(_edges(df, ds, gd, other, [f]))
            draws = rob.index.intersection(erm.index)
            cells.append((f"eps = {f:g} gamma*", _draws(rob[draws] - erm[draws])))
        return per_cell(cells, note=f"edge at eps = 0 (ERM): {erm.mean():+.3g} (mean over draws)")

    return compute


def tradeoff_cells(regime: str):
    """One cell per robust-ERM eps of ``regime``: per draw min(-clean edge, robust edge),
    the clean edge gap_clean(GD) - gap_clean(CD) and the robust edge gap(GD) - gap(CD) each
    a mean over n. It is > 0 exactly when GD's clean gap is below CD's *and* its robust gap
    above CD's on that draw; its mean is at most either part's mean, so an interval above 0
    shows both. Both parts per cell in the note."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = regimes(ctx)[regime]
        df = src["problems"]
        gd, cd = _optimizer(ctx, "gd"), _optimizer(ctx, "cd")
        cells, parts = [], []
        for f in fractions(df, "robust"):
            clean = _per_draw(_edges(df, ds, gd, cd, [f], gap="clean"))
            rob = _per_draw(_edges(df, ds, gd, cd, [f]))
            draws = clean.index.intersection(rob.index)
            both = np.minimum(-clean[draws], rob[draws])
            name = f"eps = {f:g} gamma*"
            cells.append((name, _draws(both)))
            parts.append(f"{name}: clean edge {clean.mean():+.3g}, robust edge {rob.mean():+.3g}")
        return per_cell(cells, note="; ".join(parts))

    return compute


def small_n_edge(regime: str):
    """Per draw: the edge at the grid's smallest n, in the declared Fig. 1 cell; the note
    gives the edge at that n in every robust-ERM cell (not judged: the cell is declared)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = regimes(ctx)[regime]
        df = src["problems"]
        gd, cd = _optimizer(ctx, "gd"), _optimizer(ctx, "cd")
        e = _edges(df, ds, gd, cd, fractions(df, "fig1"))
        n0 = int(e["n"].min())
        every = _edges(df, ds, gd, cd, fractions(df, "robust"))
        every = every[every["n"] == n0].groupby(EPS_FRACTION)["edge"].mean()
        shown = ", ".join(f"{f:g} gamma*: {v:+.3g}" for f, v in every.items())
        note = f"n = {n0}; at n = {n0} in every robust-ERM cell (mean over draws): {shown}"
        return _draws(_per_draw(e[e["n"] == n0]), note=note)

    return compute


def near_margin_edge(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Per (regime, draw): the signed edge GD - CD at the grid's largest fraction below 1,
    mean over the n where both runs reached the stopping loss. The note counts the (regime,
    n, draw) cells the convergence filter drops, per algorithm. Not applicable when no cell
    converged because the study's iteration cap (``stopping.max_iters``) stopped every
    unconverged run there: the study cannot reach the claim's cell by configuration."""
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
    cells = df[df[EPS_FRACTION].round(9).isin(near) & df["dataset"].isin(regimes(ctx).values())]
    dropped = _unconverged(cells, (gd, cd))
    if not vals:
        cap = ctx.config.get("stopping", {}).get("max_iters")
        stuck = cells[cells["optimizer"].isin((gd, cd))]
        if cap is not None and "iters" in stuck and _capped(stuck, int(cap)):
            raise NotApplicable(
                f"the study's iteration cap (stopping.max_iters = {int(cap)}) stops the runs "
                f"before the stopping loss at {near[0]:g} gamma* ({dropped}); judged in a "
                "study whose cap reaches it (price_near)"
            )
        raise NotRun(f"no regime where GD and CD both reached the stopping loss at {near}")
    note = f"eps = {near[0]:g} gamma*; {dropped}" + (
        f"; no converged pair in {', '.join(skipped)}" if skipped else ""
    )
    return Measurement(tuple(vals), unit="(regime, draw) pairs", labels=tuple(labels), note=note)


def _unconverged(cells: pd.DataFrame, optimizers: tuple[str, ...]) -> str:
    """'unconverged (regime, n, draw) cells dropped: lin_gd 3 of 16, lin_cd 0 of 16'."""
    parts = []
    for opt in optimizers:
        g = cells[cells["optimizer"] == opt]
        bad = int((g["converged"] <= 0.5).sum()) if "converged" in g else 0
        parts.append(f"{opt} {bad} of {len(g)}")
    return "unconverged (regime, n, draw) cells dropped: " + ", ".join(parts)


def _capped(runs: pd.DataFrame, cap: int) -> bool:
    """Every unconverged run of ``runs`` stopped at the iteration cap (none diverged)."""
    bad = runs[runs["converged"] <= 0.5] if "converged" in runs else runs
    diverged = bad["diverged"] > 0.5 if "diverged" in bad else pd.Series(False, index=bad.index)
    return bool(len(bad)) and bool((bad["iters"] >= cap).all()) and not bool(diverged.any())
