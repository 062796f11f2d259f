"""Claims of Study FA-IMAGES (Li et al., ICLR 2025, Fig. 2/3; SPEC.md "Study FA-IMAGES"),
kind ``feature_averaging_images``.

Our numbers come from ``results/<study>/figures/summary.csv``
(:func:`ibrobust.experiments.fa_images.summary_table`): one row per (dataset, model,
optimizer, supervision, eps) with the mean and std over seeds of each attack's robust
accuracy and of the worst case. Only aggregates are kept, so the rules judge the mean
difference against its spread. The column mapping is :data:`SOURCES` and the constants
below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ibrobust.claims.core import (
    Claim,
    Column,
    Measurement,
    NotRun,
    Source,
    StudyContext,
    at_least,
    not_above,
)
from ibrobust.experiments.fa_images import PAPER_ROBUST_ACC

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
}


def readouts_of(ctx: StudyContext) -> list[str]:
    """The binary readouts the study evaluates (its ``readouts``; the sum without)."""
    return list(ctx.config.get("readouts") or ["sum"])


def _row(df: pd.DataFrame, dataset: str, sup: str, eps: float, readout: str) -> pd.Series:
    sel = df[
        (df["dataset"] == dataset) & (df[SUPERVISION] == sup) & ((df["eps"] - eps).abs() < 1e-9)
    ]
    if READOUT in df and sup == MULTICLASS:
        sel = sel[sel[READOUT] == readout]
    elif READOUT in df:
        sel = sel.drop_duplicates(["dataset", SUPERVISION, "eps"])
    if sel.empty:
        raise NotRun(f"no {sup} row for {dataset} at radius {eps:g} in the summary")
    if len(sel) > 1:
        raise ValueError(f"{len(sel)} {sup} rows for {dataset} at radius {eps:g}")
    return sel.iloc[0]


def multiclass_minus_binary(dataset: str, eps: float, readout: str):
    """Mean over seeds of the k-class nets' worst-case robust accuracy minus the 2-class
    nets'; spread sqrt(sd_k^2 + sd_2^2) (the two are trained on different seeds' runs)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        m = _row(src["summary"], dataset, MULTICLASS, eps, readout)
        b = _row(src["summary"], dataset, BINARY, eps, readout)
        sd = math.sqrt(float(m[WORST_STD]) ** 2 + float(b[WORST_STD]) ** 2)
        n = int(min(m["seeds"], b["seeds"]))
        note = f"k-class {m[WORST_MEAN]:.3f} vs 2-class {b[WORST_MEAN]:.3f}"
        return Measurement.aggregated(m[WORST_MEAN] - b[WORST_MEAN], sd, n, note=note)

    return compute


def claims(ctx: StudyContext) -> list[Claim]:
    """One claim per dataset of the study that reproduces a paper task, report radius and
    readout."""
    out: list[Claim] = []
    tasks = ctx.config.get("paper_tasks") or {}
    for ds in ctx.config["datasets"]:
        task = tasks.get(ds)
        if task not in PAPER_ROBUST_ACC:
            continue
        for eps, paper in PAPER_ROBUST_ACC[task].items():
            gap = paper[MULTICLASS] - paper[BINARY]
            for ro in readouts_of(ctx):
                out.append(
                    Claim(
                        id=f"fa_images.{task}@{eps:g}",
                        setting=f"{ds}, l2 radius {eps:g}, readout {ro}",
                        claim="On real images, 10-class training gives a binary classifier "
                        "more robust than 2-class training of the same architecture.",
                        paper=f"robust acc. {paper[MULTICLASS]:.3f} vs {paper[BINARY]:.3f} "
                        f"(ResNet-18): +{gap:.3f}",
                        measure="robust_acc.worst.mean (worst case over the PGD attacks) of "
                        "the 10-class nets minus the 2-class nets' at this radius",
                        rule=at_least(
                            "k-class minus 2-class robust accuracy",
                            round(gap / 2, 4),
                            0.0,
                            on="mean",
                        ),
                        compute=multiclass_minus_binary(ds, eps, ro),
                    )
                )
    return out
