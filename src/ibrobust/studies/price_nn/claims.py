"""Claims of Study PRICE-NN (Tsilivis et al., NeurIPS 2024, Sec. 5.2, App. E-F; docs/studies/
price_nn.md, "Claims"), kind ``price_nn``.

Our numbers come from ``results/<study>/figures/cells.csv``
(:func:`ibrobust.studies.price_nn.tables.cells_table`): one row per (arch, n, eps, seed) with
both algorithms' final numbers side by side (``gd_*`` and ``sd_*``): robust test accuracy
(the worst case of the final attack set at the training eps, top-1 for the 10-class CNN),
clean test accuracy, robust train accuracy under the training PGD, whether the run fitted
(reached its train-loss threshold, the paper's reporting time), the best robust test
accuracy over its evaluation curve, and its late train-loss instability. Differences are in
accuracy points, paired by seed (the same training subset and initialisation seed), judged
only on the seeds where both algorithms fitted.
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
    pooled_slope,
)

ALGS = ("gd", "sd")
FIELDS = ("robust_test", "clean_test", "robust_train", "robust_test_best", "late_increase")
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


def _points(ctx: StudyContext, half: str) -> int | None:
    return (ctx.config.get(half) or {}).get("attack_points")


def _diff(sel: pd.DataFrame, field: str, first: str) -> pd.Series:
    """``first`` minus the other algorithm's ``field``, in points."""
    other = "sd" if first == "gd" else "gd"
    return POINTS * (sel[f"{first}_{field}"] - sel[f"{other}_{field}"])


def _seeds(values: pd.Series, sel: pd.DataFrame, note: str, ctx, half) -> Measurement:
    labels = tuple(f"seed {int(s)}" for s in sel["seed"])
    return Measurement(
        tuple(float(v) for v in values), labels=labels, note=note, points=_points(ctx, half)
    )


def _fit_note(all_: pd.DataFrame, fitted: pd.DataFrame) -> str:
    return f"{len(fitted)} of {len(all_)} seeds with both algorithms fitted"


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
                            "(cell, seed) pairs", group_name="(seed, row)")  # fmt: skip

    return compute


def cnn_robust_over_erm(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """At the smallest n, per seed: the mean over the fitted eps > 0 cells of GD - SD robust
    test accuracy minus GD - SD clean test accuracy under ERM (eps 0)."""
    df = _rows(src["cells"], "cnn")
    n0 = int(df["n"].min())
    df = df[df["n"] == n0]
    rob = (
        _fitted(df[df["eps"] > 0])
        .groupby("seed")
        .apply(lambda g: _diff(g, "robust_test", "gd").mean())
    )
    erm = _fitted(df[df["eps"] == 0]).set_index("seed")
    if rob.empty or erm.empty:
        raise NotRun(f"no seed fitted at both eps 0 and eps > 0 with n = {n0}")
    erm_d = _diff(erm, "clean_test", "gd")
    seeds = rob.index.intersection(erm_d.index)
    vals = rob[seeds] - erm_d[seeds]
    return Measurement(tuple(float(v) for v in vals), labels=tuple(f"seed {s}" for s in seeds),
                       note=f"n = {n0}", points=_points(ctx, "cnn"))  # fmt: skip


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
        return _seeds(_diff(fit, "robust_test", "sd"), fit, _fit_note(sel, fit), ctx, "fc")

    return compute


def fc_erm(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    sel = _rows(src["cells"], "fc", False)
    fit = _fitted(sel)
    if fit.empty:
        raise NotRun("no FC seed under ERM where both algorithms fitted")
    return _seeds(_diff(fit, "clean_test", "sd"), fit, _fit_note(sel, fit), ctx, "fc")


def fc_robust_over_erm(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    df = _rows(src["cells"], "fc")
    rob = (
        _fitted(df[df["eps"] > 0])
        .groupby("seed")
        .apply(lambda g: _diff(g, "robust_test", "sd").mean())
    )
    erm = _fitted(df[df["eps"] == 0]).set_index("seed")
    if rob.empty or erm.empty:
        raise NotRun("no FC seed fitted both under ERM and under robust ERM")
    erm_d = _diff(erm, "clean_test", "sd")
    seeds = rob.index.intersection(erm_d.index)
    vals = rob[seeds] - erm_d[seeds]
    return Measurement(tuple(float(v) for v in vals), labels=tuple(f"seed {s}" for s in seeds),
                       points=_points(ctx, "fc"))  # fmt: skip


def fc_overfitting(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Per fitted seed under robust ERM: GD's robust overfitting (best robust test accuracy
    over its evaluation curve minus the final) minus SD's, in points."""
    sel = _fitted(_rows(src["cells"], "fc", True)).dropna(
        subset=["gd_robust_test_best", "sd_robust_test_best"]
    )
    if sel.empty:
        raise NotRun("no fitted FC seed with evaluation curves under robust ERM")
    over = {a: POINTS * (sel[f"{a}_robust_test_best"] - sel[f"{a}_robust_test"]) for a in ALGS}
    return _seeds(over["gd"] - over["sd"], sel, "", ctx, "fc")


def _needs(half: str):
    def applies(ctx: StudyContext) -> str | None:
        return None if ctx.config.get(half) else f"the study has no {half} half"

    return applies


# ---- where the claims come from -----------------------------------------------------------------
FC = (
    "one-hidden-layer ReLU net without biases (homogeneous), exponential loss, full-batch GD "
    "and sign descent at the same constant learning rate, initialisation scaled down, "
    "random subsets of MNIST digits 2 and 7, l_inf robust ERM with 10-step PGD, 3 seeds"
)
CNN = (
    "the Madry et al. CNN (with biases: not homogeneous), cross-entropy, full-batch GD and sign "
    "descent at constant learning rates (SD's smaller), subsets of MNIST (all classes), l_inf "
    "robust ERM with 10-step PGD, reported at the first epoch whose train loss falls below a "
    "threshold after the train error reaches 0, 3 seeds"
)


def _cite(where: str, quote: str, scope: str) -> Citation:
    return Citation(TSILIVIS_2024, where, quote, scope)


HEATMAP = _cite(
    "Sec. 5.2, Convolutional NNs, Fig. 3; App. E, Fig. 8",
    "We see that the harder the problem is (fewer samples , request for larger robustness ), "
    "the bigger the price of implicit bias becomes.",
    CNN,
)
GD_WINS = _cite(
    "Sec. 5.2, Convolutional NNs, Fig. 3",
    "GD generalizes better than SD, despite facing the opposite situation in homogeneous networks.",
    CNN,
)
SD_WINS = _cite(
    "Sec. 5.2, Fully Connected NNs, Fig. 3",
    "But, for (bottom), SD significantly outperforms GD (4.11% mean difference over 3 random "
    "seeds), even though both algorithms reach 100% robust train accuracy.",
    FC,
)


def _grid(ctx: StudyContext, half: str) -> tuple[list[int], list[float]]:
    part = ctx.config.get(half) or {}
    return [int(n) for n in part.get("n_train", [])], [float(e) for e in part.get("eps", [])]


def claims(ctx: StudyContext) -> list[Claim]:
    out: list[Claim] = []
    ns, epss = _grid(ctx, "cnn")
    for n in ns:
        for eps in (e for e in epss if e > 0):
            out.append(
                Claim(
                    id="price_nn.cnn_gd_ahead",
                    setting=f"CNN, n = {n}, eps = {eps:g}, seeds where both fitted",
                    claim="On the non-homogeneous CNN, GD reaches a higher robust test "
                    "accuracy than sign descent.",
                    citation=GD_WINS,
                    derivation="The text gives no number per cell: strong = weak (P5, the "
                    "direction): GD - SD robust test accuracy (top-1, worst case over the "
                    "attack set) > 0, judged per fitted cell at the paper's reporting time.",
                    paper="GD ahead in the (n, eps) heatmap (Fig. 3, Fig. 8)",
                    measure="per seed where both algorithms fitted: GD - SD robust test "
                    "accuracy (points)",
                    rule=at_least("GD - SD", 0.0, 0.0, strict=True),
                    compute=cnn_cell(n, eps),
                    sources=("cells",),
                    applies=_needs("cnn"),
                )
            )
    out += [
        Claim(
            id="price_nn.cnn_gap_smaller_n",
            setting="CNN, fitted robust-ERM cells",
            claim="GD's edge over SD is larger with fewer training samples.",
            citation=HEATMAP,
            derivation="A trend over the grid the paper shows: the slope of GD - SD (points) on "
            "log n over every fitted robust-ERM cell, with an intercept per (seed, eps) row, not "
            "two cells. The largest (n, eps) cell is left out, declared before any run: the "
            "paper attributes it to SD's instability (price_nn.cnn_sd_unstable). No number: "
            "strong = weak (P5): < 0.",
            paper="the price grows for fewer samples (Fig. 3)",
            measure="least-squares slope of GD - SD robust test accuracy on log n, an intercept "
            "per (seed, eps)",
            rule=at_most("slope per unit log n", 0.0, 0.0, strict=True),
            compute=cnn_trend("n"),
            sources=("cells",),
            applies=_needs("cnn"),
        ),
        Claim(
            id="price_nn.cnn_gap_larger_eps",
            setting="CNN, fitted robust-ERM cells",
            claim="GD's edge over SD is larger at larger eps.",
            citation=HEATMAP,
            derivation="A trend over the grid: the slope of GD - SD (points) on eps over every "
            "fitted robust-ERM cell, with an intercept per (seed, n); the largest (n, eps) cell "
            "is left out (as for price_nn.cnn_gap_smaller_n). No number: strong = weak (P5): "
            "> 0.",
            paper="the price grows with the requested robustness (Fig. 3)",
            measure="least-squares slope of GD - SD robust test accuracy on eps, an intercept "
            "per (seed, n)",
            rule=at_least("slope per unit eps", 0.0, 0.0, strict=True),
            compute=cnn_trend("eps"),
            sources=("cells",),
            applies=_needs("cnn"),
        ),
        Claim(
            id="price_nn.cnn_robust_over_erm",
            setting="CNN, the smallest n: robust-ERM cells vs eps = 0",
            claim="With little data the algorithm's implicit bias matters more under robust "
            "ERM than under standard ERM.",
            citation=_cite(
                "App. E, Convolutional Neural Networks, Fig. 8",
                "when there are little available data , the implicit bias in robust ERM affects "
                "generalization more than in “standard” ERM (row-wise comparison in the Figure).",
                CNN,
            ),
            derivation="No number: strong = weak (P5): at the smallest n, GD - SD robust test "
            "accuracy averaged over the fitted eps > 0 cells minus GD - SD clean test accuracy "
            "at eps = 0 (paired by seed) > 0.",
            paper="the robust-ERM row differs more than the ERM row (Fig. 8)",
            measure="per seed at the smallest n: mean over eps > 0 of GD - SD robust test "
            "accuracy - (GD - SD clean test accuracy at eps 0)",
            rule=at_least("difference", 0.0, 0.0, strict=True),
            compute=cnn_robust_over_erm,
            sources=("cells",),
            applies=_needs("cnn"),
        ),
        Claim(
            id="price_nn.cnn_sd_unstable",
            setting="CNN, the largest n and eps",
            claim="In the largest (n, eps) cell sign descent becomes unstable near convergence "
            "(the paper's explanation of that cell).",
            citation=_cite(
                "App. E, Convolutional Neural Networks (on Fig. 3's bottom right corner)",
                "is due to the fact that SD becomes unstable at that time near convergence.",
                CNN,
            ),
            derivation="No number: strong = weak (P5): SD's late instability (the fraction of "
            "the last half of its logged steps whose train loss rose) exceeds GD's, paired by "
            "seed.",
            paper="SD unstable near convergence at the largest n and eps",
            measure="per seed: SD's late train-loss increase fraction - GD's, in the largest "
            "(n, eps) cell",
            rule=at_least("SD - GD late increase fraction", 0.0, 0.0, strict=True),
            compute=cnn_instability,
            sources=("cells",),
            applies=_needs("cnn"),
        ),
    ]
    _, fc_eps = _grid(ctx, "fc")
    strong = round(PAPER_FC_GAP * (1 - TOL), 2)
    for eps in (e for e in fc_eps if e > 0):
        out.append(
            Claim(
                id="price_nn.fc_sd_beats_gd",
                setting=f"FC net, MNIST 2 vs 7, eps = {eps:g}, seeds where both fitted",
                claim="Under robust ERM, sign descent reaches a higher robust test accuracy "
                "than GD on the homogeneous FC net, both fitting the training set robustly.",
                citation=SD_WINS,
                derivation=f"Strong (P2, a single published mean without spread, within 10 %): "
                f"SD - GD >= {strong} points (4.11 less 10 %). Weak (the same direction): > 0. "
                "Judged only on the seeds where both algorithms reach 100 % robust train "
                "accuracy, as the paper states it; the note says how many. The paper's eps is "
                "lost in the text: the study's eps is the project's reading, so the magnitude "
                "assumes it matches.",
                paper="SD ahead by 4.11 points on average over 3 seeds (Sec. 5.2)",
                measure="per seed where both fitted: SD - GD robust test accuracy (points; worst "
                "case of the final attacks)",
                rule=at_least("SD - GD", strong, 0.0, strict=True),
                compute=fc_robust(eps),
                sources=("cells",),
                applies=_needs("fc"),
            )
        )
    out += [
        Claim(
            id="price_nn.fc_erm_alike",
            setting="FC net, MNIST 2 vs 7, ERM (eps 0)",
            claim="Under plain ERM the two algorithms' test accuracies are alike.",
            citation=_cite(
                "Sec. 5.2, Fully Connected NNs, Fig. 3 (top)",
                "We observe that in ERM (top), the choice of the algorithm does not affect the "
                "generalization error much.",
                FC,
            ),
            derivation=f"'Does not affect much' (P4, equivalence): SD - GD clean test accuracy "
            f"within +-{EQUIV[0]:g} point (strong) or +-{EQUIV[1]:g} points (weak).",
            paper="alike (Fig. 3 top)",
            measure="per seed where both fitted: SD - GD clean test accuracy (points)",
            rule=between("SD - GD", (-EQUIV[0], EQUIV[0]), (-EQUIV[1], EQUIV[1])),
            compute=fc_erm,
            sources=("cells",),
            applies=_needs("fc"),
        ),
        Claim(
            id="price_nn.fc_gap_larger_robust",
            setting="FC net, MNIST 2 vs 7, robust ERM vs ERM",
            claim="The gap between the algorithms is larger under robust ERM than under ERM.",
            citation=_cite(
                "App. E, Fully-Connected Neural Networks, Fig. 7",
                "We observe that the gap between the performance of gradient descent and "
                "steepest descent in larger in robust ERM than in ERM.",
                FC,
            ),
            derivation="No number: strong = weak (P5): per seed, SD - GD robust test accuracy "
            "(mean over the robust-ERM eps) minus SD - GD clean test accuracy under ERM > 0.",
            paper="larger under robust ERM (Fig. 7)",
            measure="per seed: mean over eps > 0 of SD - GD robust test accuracy - (SD - GD "
            "clean test accuracy at eps 0), points",
            rule=at_least("difference", 0.0, 0.0, strict=True),
            compute=fc_robust_over_erm,
            sources=("cells",),
            applies=_needs("fc"),
        ),
        Claim(
            id="price_nn.fc_gd_overfits",
            setting="FC net, MNIST 2 vs 7, robust ERM, evaluation curves",
            claim="Robust ERM with GD overfits robustly late in training; with SD it does not.",
            citation=_cite(
                "Sec. 5.2, Fully Connected NNs",
                "robust ERM with SD not only achieves smaller robust generalization error, but "
                "also avoids robust overfitting during training, in contrast to GD.",
                FC,
            ),
            derivation="Robust overfitting = the robust test accuracy falling from its best "
            "evaluation to the end of training. No number: strong = weak (P5): GD's fall "
            "minus SD's > 0, paired by seed.",
            paper="GD overfits robustly late in training, SD does not",
            measure="per fitted seed: (GD best - final robust test accuracy) - (SD best - "
            "final), points",
            rule=at_least("GD overfitting - SD overfitting", 0.0, 0.0, strict=True),
            compute=fc_overfitting,
            sources=("cells",),
            applies=_needs("fc"),
        ),
    ]
    return out
