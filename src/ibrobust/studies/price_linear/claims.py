"""Claims of Study PRICE-LIN (Tsilivis, Frank, Srebro, Kempe, NeurIPS 2024, Sec. 4-5.1,
App. C, E; docs/studies/price_linear.md, "Claims"), kind ``price_linear``.

Our numbers come from ``results/<study>/figures/gap_vs_n.csv`` (every trained problem:
dataset, optimizer, n, draw, eps_fraction, train / test robust and clean accuracy, whether
the run reached the study's stopping loss, its normalised l_inf margin; written by the gap
figure). The *edge* of CD over GD is gap(GD) - gap(CD), paired by dataset draw (the same
training set); a claim averages it over n (and over the robust-ERM cells of the eps grid
where it says so), one value per draw, with a t interval over draws. The eps grid's cells:
eps = 0 is ERM; 0 < eps / gamma* <= :data:`ROBUST_ERM_MAX` are the robust-ERM cells; the
larger fractions (0.9, 0.99 by default) probe the approach to gamma*, where Lemma C.4 makes
every separator max-margin. ``summary.csv`` is checked as before. The column mapping is
:data:`SOURCES` and the constants below.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ibrobust.claims.citations import TSILIVIS_2024, Citation
from ibrobust.claims.core import (
    Claim,
    Column,
    Measurement,
    NotRun,
    Source,
    StudyContext,
    at_least,
    at_most,
    between,
)
from ibrobust.studies.price_linear.algorithms import algorithm_of

GAP = "robust_gap"
MEAN, STD = "{}_mean", "{}_std"
EPS_FRACTION = "eps_fraction"
ROBUST_ERM_MAX = 0.75  # robust-ERM cells: 0 < eps/gamma* <= this; above: the approach to gamma*
LIMIT_LOSS = 1e-10  # a study stopping below this train loss trains to the limit (price_limit)
EQUIV = (0.01, 0.03)  # docs/studies/README.md, rule P4: "the same" within 1 (3) points
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


# ---- applicability ------------------------------------------------------------------------------
def _needs(regime: str):
    def applies(ctx: StudyContext) -> str | None:
        if regime not in regimes(ctx):
            return f"the study has no {regime} regime"
        return None

    return applies


def _stops_at(ctx: StudyContext) -> float:
    return float(ctx.config["stopping"]["loss_threshold"])


def _protocol_only(ctx: StudyContext) -> str | None:
    """The paper's protocol claims need its stopping rule (a common, moderate train loss)."""
    if _stops_at(ctx) < LIMIT_LOSS:
        return (
            f"the study trains to the limit (stopping loss {_stops_at(ctx):g} < {LIMIT_LOSS:g}); "
            "the paper's generalization claims are judged in studies that stop at its "
            "protocol's common train loss"
        )
    return None


def _limit_only(ctx: StudyContext) -> str | None:
    if _stops_at(ctx) >= LIMIT_LOSS:
        return (
            f"the study stops at train loss {_stops_at(ctx):g} (the paper's protocol), where "
            "the normalised margin is still about log(n) / log(1/(n L)) from its t -> inf "
            "limit; the limit is judged in a study trained to a loss below "
            f"{LIMIT_LOSS:g} (configs: study price_limit)"
        )
    return None


# ---- the claims ----------------------------------------------------------------------------
LINEAR = (
    "full-batch steepest descent (GD = l2, CD = l1) and GD on a diagonal net, linear models "
    "on teacher data, worst-case exponential loss, l_inf robust ERM, loss-adaptive step, "
    "zero init; trained until all algorithms reach the same train loss"
)


def _cite(where: str, quote: str, scope: str = LINEAR) -> Citation:
    return Citation(TSILIVIS_2024, where, quote, scope)


RISE = _cite(
    "Sec. 5.1, Results, on Fig. 2 (right)",
    "We also observe that when goes from to the edge of CD over GD grows.",
)
FALL = _cite(
    "Sec. 5.1, Results, on Fig. 2 (right); App. C.2, Lemma C.4",
    "Past a certain threshold of , the two methods will start to perform the same, since for "
    "the algorithms return the same solution (Lemma C.4).",
)
ROBUST_CELLS = f"the robust-ERM cells (0 < eps/gamma* <= {ROBUST_ERM_MAX:g})"


def claims(ctx: StudyContext) -> list[Claim]:
    rg = regimes(ctx)
    out: list[Claim] = []
    sparse_w = rg.get("sparse w*", "sparse teacher, dense x")
    for alg, label in (("cd", "coordinate descent (l1 bias)"), ("diag_gd", "a diagonal net")):
        out.append(
            Claim(
                id=f"price.gd_minus_{alg}",
                setting=f"{sparse_w}, {ROBUST_CELLS}",
                claim=f"For l_inf robust ERM with a sparse teacher, {label} generalizes "
                "robustly better than GD's l2 bias (a smaller robust generalization gap).",
                citation=_cite(
                    "Sec. 5.1, Results, on Fig. 2 (left)",
                    "CD and diag-net-GD already outperform GD in terms of generalization when "
                    "implementing ERM, as a result of their bias towards minimum (sparse "
                    "solutions). However, in agreement with the bounds of Section 3.2, the "
                    "interval between the algorithms grows when performing robust ERM",
                ),
                derivation="The text gives no number for the gap difference: strong = weak "
                "(P5, the direction): gap(GD) - gap(" + alg + ") > 0, averaged over n and over "
                "the robust-ERM cells of the grid (the figure's own eps is not in the text).",
                paper="GD's gap exceeds CD's / the diagonal net's (Fig. 2 left)",
                measure=f"robust gap (train - test robust accuracy) of GD minus {alg}'s, paired "
                "by draw, mean over n and the robust-ERM cells: one value per draw",
                rule=at_least("gap difference", 0.0, 0.0, strict=True),
                compute=robust_edge("sparse w*", alg),
                sources=("summary", "problems"),
                applies=_needs("sparse w*"),
                not_applicable=_protocol_only,
            )
        )
    for regime in ("dense/dense", "sparse w*", "sparse/sparse"):
        ds = rg.get(regime, regime)
        out += [
            Claim(
                id="price.edge_rises_from_erm",
                setting=f"{ds}: {ROBUST_CELLS} vs eps = 0",
                claim="The edge of CD over GD (gap(GD) - gap(CD)) is larger under robust ERM "
                "than under ERM: it grows as eps rises from 0.",
                citation=RISE,
                derivation="A trend over the grid: the mean edge over every robust-ERM cell "
                "minus the edge at eps = 0 (paired by draw), not two hand-picked points. No "
                "number in the text: strong = weak (P5): > 0. Judged in the regimes where "
                "the paper shows CD ahead (Fig. 1 bottom: dense/dense; Fig. 2 left: sparse "
                "w*; Sec. 3.2 Case 4: sparse/sparse, 'as eps increases, l2 regularization "
                "starts paying'); the fourth is price.no_edge_regime.",
                paper="the edge grows as eps rises from 0 (Fig. 2 right); the interval between "
                "the algorithms grows under robust ERM (Fig. 2 left)",
                measure="per draw: [edge mean over n and the robust-ERM cells] - [edge mean "
                "over n at eps = 0]",
                rule=at_least("edge(robust ERM) - edge(ERM)", 0.0, 0.0, strict=True),
                compute=edge_change(regime, "erm", "robust"),
                sources=("summary", "problems"),
                applies=_needs(regime),
                not_applicable=_protocol_only,
            ),
            Claim(
                id="price.edge_falls_toward_margin",
                setting=f"{ds}: {ROBUST_CELLS} vs the grid's largest eps below gamma*",
                claim="Past a threshold of eps the edge shrinks again: near gamma* the two "
                "methods perform about the same.",
                citation=FALL,
                derivation="A trend over the grid: the mean edge over the robust-ERM cells "
                "minus the edge at the largest grid eps below gamma* (the approach to the "
                "margin), paired by draw. No number in the text: strong = weak (P5): > 0. "
                "Same regimes as price.edge_rises_from_erm.",
                paper="the methods perform the same past a threshold of eps (Fig. 2 right)",
                measure="per draw: [edge mean over n and the robust-ERM cells] - [edge mean "
                "over n at the largest eps/gamma* < 1]",
                rule=at_least("edge(robust ERM) - edge(near gamma*)", 0.0, 0.0, strict=True),
                compute=edge_change(regime, "near", "robust"),
                sources=("summary", "problems"),
                applies=_needs(regime),
                not_applicable=_protocol_only,
            ),
        ]
    dense, sparse_x = rg.get("dense/dense", "dense/dense"), rg.get("sparse x", "sparse x")
    out += [
        Claim(
            id="price.no_edge_regime",
            setting=f"{sparse_x}, {ROBUST_CELLS}",
            claim="With a dense teacher and sparse inputs CD does not beat GD under robust "
            "ERM: the problem is skewed towards dense solutions.",
            citation=_cite(
                "Sec. 5.1, Results, on Fig. 2 (right); App. E on Fig. 5 (top); Sec. 3.2 Case 3",
                "there are cases with where CD does not outperform GD (, ), because the "
                "learning problem is much more “skewed” towards dense solutions.",
            ),
            derivation="The regime is the paper's Dense, Sparse (k_w, k_x) = (512, 4) (App. E: "
            "'(512, 4) (Dense, Sparse)'; Case 3: the l1 bound is not favourable there). 'CD "
            "does not outperform GD' includes a tie: the edge gap(GD) - gap(CD) over the "
            f"robust-ERM cells at most +{EQUIV[0]:g} (strong, P4's equivalence margin) or "
            f"+{EQUIV[1]:g} (weak); it does not hold when CD is clearly ahead.",
            paper="CD does not outperform GD in the dense-teacher, sparse-x regime",
            measure="per draw: gap(GD) - gap(CD), mean over n and the robust-ERM cells",
            rule=at_most("gap difference", EQUIV[0], EQUIV[1]),
            compute=robust_edge("sparse x"),
            sources=("summary", "problems"),
            applies=_needs("sparse x"),
            not_applicable=_protocol_only,
        ),
        Claim(
            id="price.dense_erm_alike",
            setting=f"{dense}, eps = 0 (ERM)",
            claim="With dense teacher and dense inputs the algorithms generalize alike under ERM.",
            citation=_cite(
                "Sec. 5.1, Results, on Fig. 1 (bottom)",
                "the algorithms generalize similarly when implementing ERM, yet their gap "
                "between their robust generalization in robust ERM exceeds 20% in the case of "
                "few training data!",
            ),
            derivation=f"'Similarly' (P4, equivalence): the edge at eps = 0 within +-"
            f"{EQUIV[0]:g} (strong) or +-{EQUIV[1]:g} (weak), mean over n.",
            paper="GD and CD generalize similarly under ERM (Fig. 1 bottom)",
            measure="per draw: gap(GD) - gap(CD) at eps = 0, mean over n",
            rule=between("gap difference", (-EQUIV[0], EQUIV[0]), (-EQUIV[1], EQUIV[1])),
            compute=robust_edge("dense/dense", cells="erm"),
            sources=("summary", "problems"),
            applies=_needs("dense/dense"),
            not_applicable=_protocol_only,
        ),
        Claim(
            id="price.dense_robust_gap_20",
            setting=f"{dense}, smallest n, eps = {FIG1_FRACTION:g} gamma*",
            claim="With dense teacher and dense inputs the robust-gap difference between GD "
            "and CD exceeds 20 % with few training data.",
            citation=_cite(
                "Sec. 5.1, Results, on Fig. 1 (bottom)",
                "yet their gap between their robust generalization in robust ERM exceeds 20% "
                "in the case of few training data!",
            ),
            derivation="The source's number is a bound read off one figure at one eps ('exceeds "
            "20%'): strong: the edge at the grid's smallest n >= 0.20, in one cell declared "
            f"before any run (the figure's eps is lost in the text): eps = {FIG1_FRACTION:g} "
            "gamma*, the middle robust-ERM cell. Weak (the same direction): > 0.",
            paper="> 0.20 at small n (Fig. 1 bottom)",
            measure="per draw: gap(GD) - gap(CD) at the smallest n, mean over the robust-ERM cells",
            rule=at_least("gap difference", 0.20, 0.0, strict=True),
            compute=small_n_edge("dense/dense"),
            sources=("summary", "problems"),
            applies=_needs("dense/dense"),
            not_applicable=_protocol_only,
        ),
        Claim(
            id="price.clean_tradeoff",
            setting=f"{dense}, the grid's largest eps below gamma*, clean gaps",
            claim="With dense teacher and dense inputs, robust ERM by GD generalizes better "
            "than by CD on clean error although worse on robust error.",
            citation=_cite(
                "App. E, on Fig. 6 (clean-gap heatmaps)",
                "GD generalizes better than CD in terms of clean error, even though it was the "
                "other way around for robustness",
            ),
            derivation="The text names one cell of the heatmap: the Dense, Dense regime at its "
            "'bottom right corner' (its eps value is lost); the heatmaps aggregate over n and "
            "put eps on the horizontal axis, so the corner is read as the grid's largest eps "
            "below gamma*. No number: strong = weak (P5): the clean-gap edge gap_clean(GD) - "
            "gap_clean(CD) < 0 there, mean over n.",
            paper="GD's clean gap below CD's in Dense/Dense robust ERM (Fig. 6)",
            measure="per draw: clean gap (train - test clean accuracy) of GD minus CD's, mean "
            "over n, at the grid's largest eps/gamma* < 1",
            rule=at_most("clean gap difference", 0.0, 0.0, strict=True),
            compute=robust_edge("dense/dense", cells="near", gap="clean"),
            sources=("summary", "problems"),
            applies=_needs("dense/dense"),
            not_applicable=_protocol_only,
        ),
        Claim(
            id="price.vanishes_at_margin",
            setting="every regime, the grid's largest eps below gamma*, runs that converged",
            claim="As eps approaches the dataset's l_inf margin gamma*, every robust separator "
            "becomes max-margin, so GD and CD generalize alike.",
            citation=_cite(
                "App. C.2, Lemma C.4; Sec. 4.1",
                "Any hyperplane that separates is an max-margin separator for any .",
                scope="exactly eps = gamma*, the limit (max-margin) solutions",
            ),
            derivation="Lemma C.4 holds exactly at eps = gamma*, where no run can reach the "
            "stopping loss (every separator's robust margin is <= 0 there, so the loss stays "
            f">= 1/n): the claim is judged at the grid's largest eps below gamma* (at least "
            f"{NEAR_MIN:g} gamma*), on the "
            "(n, draw) cells where both GD and CD reached the stopping loss (converged runs, "
            f"as the lemma assumes). 'The same' (P4, equivalence): the signed edge within "
            f"+-{EQUIV[0]:g} (strong) or +-{EQUIV[1]:g} (weak).",
            paper="0 at eps = gamma* (Lemma C.4)",
            measure="per (regime, draw): signed gap(GD) - gap(CD) at the largest eps/gamma* < 1, "
            "mean over the n where both runs converged",
            rule=between("gap difference", (-EQUIV[0], EQUIV[0]), (-EQUIV[1], EQUIV[1])),
            compute=near_margin_edge,
            sources=("summary", "problems"),
            not_applicable=_protocol_only,
        ),
    ]
    # robust separation at the robust-ERM cells needs margin_ratio >= eps / gamma*
    robust_max = max(
        (float(f) for f in ctx.config["eps_fractions"] if float(f) <= ROBUST_ERM_MAX), default=0.0
    )
    for alg, label, where in (
        ("cd", "coordinate descent (steepest descent w.r.t. l1)", "Theorem 4.3, Corollary 4.5"),
        ("diag_gd", "GD on the diagonal net", "Corollary 4.7, Proposition 4.8, Remark 4.9"),
    ):
        verb = "converges in direction to" if alg == "cd" else "is biased towards"
        out.append(
            Claim(
                id=f"price.limit_is_min_l1_{alg}",
                setting="every regime, eps < gamma*, runs trained to the limit",
                claim=f"Robust ERM with {label} {verb} the minimum-l1-norm robust separator: "
                "its normalised l_inf margin approaches the dataset's gamma*.",
                citation=_cite(
                    f"Sec. 4, {where}",
                    "Minimizing the loss of eq. (8) with steepest flow with respect to the norm "
                    "(on separable data) convergences to a minimum norm solution that "
                    "classifies all the points correctly."
                    if alg == "cd"
                    else "These results suggest that the bias of gradient-descent based robust "
                    "ERM over diagonal networks is towards minimum solutions",
                    scope="steepest flow (Thm 4.3) / gradient flow (Cor. 4.7), t -> inf, "
                    "separable data, worst-case exponential loss",
                ),
                derivation="For the l1 geometry the robust max-margin problem max_{||w||_1 <= 1} "
                "min_i y_i <w, x_i> - eps ||w||_1 has the clean l1 max-margin direction as its "
                "solution at every eps < gamma* (the eps term is constant on the l1 sphere), so "
                "the limit's margin_ratio = min_i y_i <w, x_i> / (||w||_1 gamma*) is 1 (gamma* "
                "from the exact LP). Strong (P2, the theory's constant within 10 %): >= 0.9. "
                "Weak (the same direction: a robust separator at every robust-ERM eps, which "
                f"needs margin_ratio >= eps/gamma*): >= {robust_max:g}, the grid's largest "
                "robust-ERM fraction. The upper end 1.001 allows the LP's rounding. A t -> inf "
                "statement: judged only on runs trained to a loss below 1e-10."
                + (
                    ""
                    if alg == "cd"
                    else " For the diagonal net Corollary 4.7 gives a KKT point only; that it "
                    "is the l1 minimum is the paper's stated belief (Remark 4.9); its results "
                    "'suggest', a weaker word than the steepest flow's theorem, and the l1 bias "
                    "of a diagonal net is known to need a small initial scale (the optimizer's "
                    "alpha; a large one trains like the linearised, l2-like model). The rule is "
                    "CD's (the same limit and constant); the verdict is read with that caveat."
                ),
                paper="the minimum-l1-norm robust separator in the limit",
                measure=f"margin_ratio of the {alg} runs that reached the stopping loss, mean "
                "over n and eps < gamma*, one value per (regime, draw)",
                rule=between("margin ratio", (0.9, 1.001), (robust_max, 1.001)),
                compute=limit_margin(alg),
                sources=("problems",),
                not_applicable=_limit_only,
            )
        )
    return out
