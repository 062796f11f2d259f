"""What Study FA-IMAGES' claims measure (kind ``feature_averaging_images``; the claims themselves,
quote, rule and derivation, are ``claims.yaml`` beside this module, read by
:mod:`ibrobust.claims.declared`).

Our numbers come from ``results/<study>/figures/robust_accuracy_vs_radius.csv`` (the
robust-accuracy figure's data: one row per run, readout, attack and radius): per seed, the
k-class net's worst-case robust accuracy minus the 2-class net's at a report radius (both
trained and attacked on that seed's data subset and test points), with a t interval over
seeds. ``summary.csv`` (:func:`ibrobust.studies.feature_averaging_images.tables.summary_table`)
is checked as before (the worst case is the smallest). The column mapping is :data:`SOURCES`.
:data:`MEASURES` names the measures the claim file calls, :data:`CONTEXT` the functions of the
configuration it reads (the paper tasks the study runs, its readouts, the rule's basis).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ibrobust.claims.core import Column, Measurement, NotRun, Source, StudyContext, not_above
from ibrobust.studies.feature_averaging_images.tables import PAPER_ROBUST_ACC

SUPERVISION = "supervision"
BINARY, MULTICLASS = "binary", "multiclass"
READOUT = "readout"  # optional column; absent: the study's single readout
ACC = "robust_acc.{attack}.{stat}"
ATTACKS = ("pgd_margin_img", "pgd_ce_img")
WORST_MEAN, WORST_STD = (
    ACC.format(attack="worst", stat="mean"),
    ACC.format(attack="worst", stat="std"),
)

SOURCES: dict[str, Source] = {
    "summary": Source(
        path="figures/summary.csv",
        keys={"dataset": None, SUPERVISION: (BINARY, MULTICLASS)},
        numeric=(
            Column("eps", lo=0),
            Column("seeds", lo=1),
            Column(WORST_MEAN, lo=0, hi=1),
            Column(WORST_STD, lo=0, hi=1, nan_ok=True),
            *(
                Column(ACC.format(attack=a, stat="mean"), lo=0, hi=1, nan_ok=True, required=False)
                for a in ATTACKS
            ),
        ),
        checks=(not_above(WORST_MEAN, [ACC.format(attack=a, stat="mean") for a in ATTACKS]),),
        built_by="`snakemake fa_images --config data_root=DIR` (needs the image datasets)",
    ),
    "curves": Source(
        path="figures/robust_accuracy_vs_radius.csv",
        keys={"dataset": None, SUPERVISION: (BINARY, MULTICLASS), "attack": None},
        numeric=(
            Column("seed", lo=0),
            Column("eps", lo=0),
            Column("robust_acc", lo=0, hi=1),
            Column("n", lo=1, required=False),  # the points attacked (measured)
        ),
        built_by="`snakemake fa_images --config data_root=DIR` (needs the image datasets)",
    ),
}


def readouts_of(ctx: StudyContext) -> list[str]:
    """The binary readouts the study evaluates (its ``readouts``; the sum without)."""
    return list(ctx.config.get("readouts") or ["sum"])


def _per_seed(df: pd.DataFrame, dataset: str, sup: str, eps: float, readout: str) -> pd.Series:
    """Worst-case robust accuracy per seed of one supervision at one radius (a 2-class net
    has one score: its rows repeat under every readout, any serves)."""
    sel = df[
        (df["dataset"] == dataset)
        & (df[SUPERVISION] == sup)
        & (df["attack"] == "worst")
        & ((df["eps"] - eps).abs() < 1e-9)
    ]
    if READOUT in df:
        sel = sel[sel[READOUT] == readout] if sup == MULTICLASS else sel.drop_duplicates("seed")
    if sel.empty:
        raise NotRun(f"no {sup} row for {dataset} at radius {eps:g}")
    if sel["seed"].duplicated().any():
        raise ValueError(f"several {sup} rows per seed for {dataset} at radius {eps:g}")
    return sel.set_index("seed")["robust_acc"]


def _attacked(curves: pd.DataFrame, dataset: str) -> int | None:
    """The points the attacks ran on, as measured (the curves' ``n``, the fewest on the
    dataset), not the config's attack_points; None for curves written without it."""
    if "n" not in curves:
        return None
    n = curves.loc[curves["dataset"] == dataset, "n"].dropna()
    return int(n.min()) if len(n) else None


def multiclass_minus_binary(dataset: str, eps: float, readout: str):
    """Per seed: the k-class nets' worst-case robust accuracy minus the 2-class nets' (the
    same seed's data subset and test points); t interval over seeds."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        m = _per_seed(src["curves"], dataset, MULTICLASS, eps, readout)
        b = _per_seed(src["curves"], dataset, BINARY, eps, readout)
        seeds = m.index.intersection(b.index)
        if seeds.empty:
            raise NotRun(f"no seed with both a 2-class and a k-class run on {dataset}")
        note = f"k-class {m[seeds].mean():.3f} vs 2-class {b[seeds].mean():.3f}"
        diff = tuple(float(v) for v in m[seeds] - b[seeds])
        return Measurement(diff, note=note, points=_attacked(src["curves"], dataset))

    return compute


# The ledger's reading of the paper's Fig. 2 (ResNet-18): robust accuracy per task, radius and
# supervision, and each reading's precision (a value given as "~80" to +-2.5 points, one
# given to half a point, as "43.5", to +-1): docs/studies/fa_images.md.
READING_PRECISION: dict[str, dict[float, dict[str, float]]] = {
    "mnist_parity": {1.2: {"multiclass": 0.025, "binary": 0.025},
                     1.6: {"multiclass": 0.025, "binary": 0.025}},
    "cifar10_halves": {0.4: {"multiclass": 0.025, "binary": 0.025},
                       0.8: {"multiclass": 0.01, "binary": 0.01}},
}  # fmt: skip
PAPER_READOUT = "sum"  # the figure's binary classifier from the 10-class net (SPEC: sum readout)
PAPER_MODEL_KIND = "resnet18"  # the figure's architecture: its magnitudes hold for it only


def paper_architecture(ctx: StudyContext) -> bool:
    """Whether every model the study trains is of the paper's architecture (ResNet-18)."""
    return all(ctx.models[m]["kind"] == PAPER_MODEL_KIND for m in ctx.config["models"])


def paper_cells(ctx: StudyContext) -> list[dict]:
    """One cell per dataset of the study that reproduces a paper task and report radius of
    :data:`PAPER_ROBUST_ACC`, in the config's order: the figure's robust accuracies (``mc``,
    ``binary``), their gap, each one's reading precision and the strong threshold of the
    figure within its reading (``strong_paper`` = gap - both precisions, rounded to 1e-4)."""
    out = []
    tasks = ctx.config.get("paper_tasks") or {}
    for ds in ctx.config["datasets"]:
        task = tasks.get(ds)
        if task not in PAPER_ROBUST_ACC:
            continue
        for eps, paper in PAPER_ROBUST_ACC[task].items():
            prec = READING_PRECISION[task][eps]
            gap = paper[MULTICLASS] - paper[BINARY]
            out.append(
                dict(
                    dataset=ds, task=task, eps=eps, mc=paper[MULTICLASS], binary=paper[BINARY],
                    gap=gap, prec_mc=prec[MULTICLASS], prec_b=prec[BINARY],
                    strong_paper=round(gap - prec[MULTICLASS] - prec[BINARY], 4),
                )
            )  # fmt: skip
    return out


def reading_basis(ctx: StudyContext, readout: str) -> str:
    """Which of the figure's numbers a readout's rule may use: ``paper`` (the paper's readout
    and architecture: the figure within its reading), ``architecture`` (the paper's readout
    on another architecture: the direction only), ``readout`` (another readout: the
    direction only)."""
    if readout != PAPER_READOUT:
        return "readout"
    return "paper" if paper_architecture(ctx) else "architecture"


MEASURES = {"multiclass_minus_binary": multiclass_minus_binary}
CONTEXT = {"paper_cells": paper_cells, "readouts": readouts_of, "reading_basis": reading_basis}
