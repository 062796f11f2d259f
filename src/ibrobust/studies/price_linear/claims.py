"""Claims of Study PRICE-LIN (Tsilivis, Frank, Srebro, Kempe, NeurIPS 2024, Sec. 5.1;
docs/studies/price_linear.md, "Claims"), kind ``price_linear``.

Our numbers come from ``results/<study>/figures/gap_vs_n.csv`` (every trained problem:
dataset, optimizer, n, draw, eps_fraction, train / test robust accuracy; written by the
gap figure): a difference of two algorithms' robust gaps is paired by dataset draw (the
same training set) and averaged over n, one value per draw, with a t interval over draws.
``summary.csv`` (:func:`ibrobust.studies.price_linear.tables.mean_over_draws`) is
checked as before. The column mapping is :data:`SOURCES` and the constants below.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ibrobust.claims.core import (
    Claim,
    Column,
    Measurement,
    NotRun,
    Source,
    StudyContext,
    at_least,
    at_most,
)
from ibrobust.studies.price_linear.algorithms import algorithm_of

GAP = "robust_gap"
MEAN, STD = "{}_mean", "{}_std"
EPS_FRACTION = "eps_fraction"
CLAIM_FRACTION = 0.5  # the eps / gamma* at which "CD beats GD" is judged (mid-range)
GROWTH_FRACTIONS = (0.25, 0.75)  # the gap difference at the second exceeds the first
MARGIN_FRACTION = 0.99  # closest to gamma* on the default grid

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
        ),
        built_by="the study's target (and the default target)",
    ),
}


def _optimizer(ctx: StudyContext, algorithm: str) -> str:
    for name in ctx.config["optimizers"]:
        if algorithm_of(ctx.optimizers[name]) == algorithm:
            return name
    raise NotRun(f"the study runs no {algorithm} optimizer")


def sparse_teacher_regime(ctx: StudyContext) -> str | None:
    """The study's first dataset with a sparse teacher and dense inputs (paper Fig. 2)."""
    for ds in ctx.config["datasets"]:
        c = ctx.datasets[ds]
        if int(c["k_w"]) < int(c["d"]) and int(c["k_x"]) == int(c["d"]):
            return ds
    return None


def _by_draw(df, dataset: str, first: str, second: str, fraction: float) -> pd.DataFrame:
    """(n, draw) -> robust gap of ``first`` minus that of ``second`` (paired: the same draw's
    training set) at eps = ``fraction`` gamma*."""
    sel = df[(df["dataset"] == dataset) & ((df[EPS_FRACTION] - fraction).abs() < 1e-9)]
    gaps = {}
    for opt in (first, second):
        g = sel[sel["optimizer"] == opt]
        if g.empty:
            raise NotRun(f"no rows for {opt} on {dataset} at eps/gamma* = {fraction:g}")
        g = g.set_index(["n", "draw"])
        if g.index.duplicated().any():
            raise ValueError(f"several rows per (n, draw) for {opt} on {dataset} at {fraction:g}")
        gaps[opt] = g["train_robust_acc"] - g["test_robust_acc"]
    both = gaps[first].index.intersection(gaps[second].index)
    if both.empty:
        raise NotRun(f"{first} and {second} share no (n, draw) on {dataset}")
    return (gaps[first][both] - gaps[second][both]).rename("difference").reset_index()


def _per_draw(diff: pd.DataFrame) -> pd.Series:
    """Mean over n of a paired difference, one value per draw."""
    return diff.groupby("draw")["difference"].mean()


def gd_minus(algorithm: str, fraction: float):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = sparse_teacher_regime(ctx)
        gd, other = _optimizer(ctx, "gd"), _optimizer(ctx, algorithm)
        d = _per_draw(_by_draw(src["problems"], ds, gd, other, fraction))
        return Measurement(tuple(d), unit="draws")

    return compute


def growth(algorithm: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        ds = sparse_teacher_regime(ctx)
        gd, other = _optimizer(ctx, "gd"), _optimizer(ctx, algorithm)
        lo = _per_draw(_by_draw(src["problems"], ds, gd, other, GROWTH_FRACTIONS[0]))
        hi = _per_draw(_by_draw(src["problems"], ds, gd, other, GROWTH_FRACTIONS[1]))
        draws = lo.index.intersection(hi.index)
        return Measurement(tuple(hi[draws] - lo[draws]), unit="draws")

    return compute


def vanishing(algorithm: str):
    """|gap(GD) - gap(CD)| at eps ~ gamma*, mean over n, one value per (regime, draw): every
    regime's draws are independent datasets, so the t interval is over those pairs."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        gd, other = _optimizer(ctx, "gd"), _optimizer(ctx, algorithm)
        vals = []
        for ds in ctx.config["datasets"]:
            d = _per_draw(_by_draw(src["problems"], ds, gd, other, MARGIN_FRACTION))
            vals += [abs(float(v)) for v in d]
        return Measurement(tuple(vals), unit="(regime, draw) pairs")

    return compute


def _needs_sparse_teacher(ctx: StudyContext) -> str | None:
    if sparse_teacher_regime(ctx) is None:
        return "the study has no sparse-teacher, dense-input regime (k_w < d = k_x)"
    return None


def claims(ctx: StudyContext) -> list[Claim]:
    regime = sparse_teacher_regime(ctx) or "sparse teacher, dense x"
    out = []
    for alg, label in (("cd", "coordinate descent (l1 bias)"), ("diag_gd", "a diagonal net")):
        out.append(
            Claim(
                id=f"price.gd_minus_{alg}",
                setting=f"{regime}, eps = {CLAIM_FRACTION:g} gamma*",
                claim=f"For l_inf robust ERM, {label} generalizes robustly better than "
                "GD's l2 bias (a smaller robust generalization gap).",
                paper="GD's gap exceeds CD's / the diagonal net's (Fig. 2, qualitative)",
                measure=f"robust gap (train - test robust accuracy) of GD minus {alg}'s, "
                "paired by draw, mean over n: one value per draw",
                rule=at_least("gap difference", 0.01, 0.0),
                compute=gd_minus(alg, CLAIM_FRACTION),
                sources=("summary", "problems"),
                applies=_needs_sparse_teacher,
            )
        )
    out.append(
        Claim(
            id="price.gap_grows_with_eps",
            setting=f"{regime}, eps = {GROWTH_FRACTIONS[1]:g} vs {GROWTH_FRACTIONS[0]:g} gamma*",
            claim="The robust-gap difference between GD and CD grows with eps.",
            paper="grows with eps (Fig. 2 right, heatmap)",
            measure="per draw (mean over n): [gap(GD) - gap(CD)] at the larger eps minus at "
            "the smaller",
            rule=at_least("growth", 0.0, 0.0),
            compute=growth("cd"),
            sources=("summary", "problems"),
            applies=_needs_sparse_teacher,
        )
    )
    out.append(
        Claim(
            id="price.vanishes_at_margin",
            setting=f"every regime, eps = {MARGIN_FRACTION:g} gamma*",
            claim="At eps = the dataset's l_inf margin every robust separator coincides, so "
            "the GD - CD gap difference vanishes.",
            paper="0 at eps = gamma* (Lemma C.4)",
            measure="|mean over n of gap(GD) - gap(CD)| per regime and draw",
            rule=at_most("|gap difference|", 0.01, 0.03),
            compute=vanishing("cd"),
            sources=("summary", "problems"),
        )
    )
    return out
