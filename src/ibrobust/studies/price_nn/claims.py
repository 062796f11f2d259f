"""Claims of Study PRICE-NN (Tsilivis et al., NeurIPS 2024, Sec. 5.2; docs/studies/price_nn.md,
"Claims"), kind ``price_nn``.

Our numbers come from ``results/<study>/figures/summary.csv``
(:func:`ibrobust.studies.price_nn.tables.study_tables`): one row per (arch, eps, n, metric)
with the paired difference of two algorithms in accuracy points (FC: ``sd-gd``; CNN:
``gd-sd``), its mean, sd and the per-seed values. Robust accuracy is the worst case of the
final attack set at the training eps (``robust_test_acc_worst``).

What the computes read (issue 37 kept these columns; the declarations are the lead's to
rewrite): ``fc_robust`` and ``fc_erm`` read summary.csv's ``arch``, ``metric``, ``eps`` and
``per_seed`` (every seed, fitted or not; ``per_seed_fitted`` / ``seed_ids`` beside it say
where both algorithms fit); ``cnn_cells`` also reads ``fitted`` (every run of the cell
reached its loss threshold: no longer robust train acc. >= 0.9). Per-seed pairs with both
algorithms' columns are in ``figures/seeds.csv`` (not read here).
"""

from __future__ import annotations

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
    between,
)

STRONG = "robust_test_acc_worst"
SOURCES: dict[str, Source] = {
    "summary": Source(
        path="figures/summary.csv",
        keys={
            "arch": ("fc", "cnn"),
            "metric": None,
            "difference": ("sd-gd", "gd-sd"),
            "per_seed": None,  # the per-seed values, space-separated
            "fitted": ("True", "False"),
        },
        numeric=(
            Column("eps", lo=0, hi=1),
            Column("n", lo=1),
            Column("mean", lo=-100, hi=100),
            Column("std", lo=0, hi=200),
            Column("seeds", lo=1),
        ),
        built_by="the study's target (snakemake price_nn; not in the default target)",
    ),
}


def _per_seed(df: pd.DataFrame) -> tuple[float, ...]:
    return tuple(float(v) for s in df["per_seed"] for v in str(s).split())


def _cells(df: pd.DataFrame, arch: str, metric: str, robust: bool) -> pd.DataFrame:
    sel = df[(df["arch"] == arch) & (df["metric"] == metric)]
    sel = sel[sel["eps"] > 0] if robust else sel[sel["eps"] == 0]
    if sel.empty:
        raise NotRun(f"no {arch} rows of {metric} at {'eps > 0' if robust else 'eps 0'}")
    return sel


def _points(ctx: StudyContext, half: str) -> int | None:
    return (ctx.config.get(half) or {}).get("attack_points")


def fc_robust(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """SD - GD robust test accuracy (points) of the FC net under robust ERM, per seed (and
    eps), strong attacks; t interval over those."""
    cells = _cells(src["summary"], "fc", STRONG, True)
    unit = "seeds" if len(cells) == 1 else "(seed, eps) pairs"
    return Measurement(_per_seed(cells), unit=unit, points=_points(ctx, "fc"))


def fc_erm(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """SD - GD clean test accuracy (points) of the FC net under ERM, per seed: the rule asks
    that the interval of the mean difference lie within +-1 point."""
    vals = _per_seed(_cells(src["summary"], "fc", "test_acc", False))
    return Measurement(vals, points=_points(ctx, "fc"))


def cnn_cells(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """GD - SD robust test accuracy (points) of the CNN, one value per (n, eps > 0) cell and
    seed, over the cells where every run fit the training set; t interval over those (each
    cell and seed trains its own pair of nets)."""
    sel = _cells(src["summary"], "cnn", STRONG, True)
    fitted = sel[sel["fitted"].astype(str).str.lower() == "true"]
    if fitted.empty:
        raise NotRun(
            f"no CNN cell at eps > 0 where both algorithms fit the training set "
            f"({len(sel)} cells ran)"
        )
    note = f"{len(fitted)} of {len(sel)} cells fitted"
    return Measurement(
        _per_seed(fitted), unit="(cell, seed) pairs", points=_points(ctx, "cnn"), note=note
    )


def _needs(half: str):
    def applies(ctx: StudyContext) -> str | None:
        return None if ctx.config.get(half) else f"the study has no {half} half"

    return applies


def claims(ctx: StudyContext) -> list[Claim]:
    return [
        Claim(
            id="price_nn.fc_sd_beats_gd",
            setting="FC net, MNIST 2 vs 7, robust ERM (eps > 0)",
            claim="Under robust ERM, sign descent reaches a higher robust test accuracy than "
            "GD on the homogeneous FC net.",
            paper="SD ahead by 4.11 points on average over 3 seeds (Sec. 5.2)",
            measure="SD - GD robust test accuracy (points; worst case of the final attacks), "
            "per seed and eps",
            rule=at_least("SD - GD", 1.0, 0.0),
            compute=fc_robust,
            applies=_needs("fc"),
        ),
        Claim(
            id="price_nn.fc_erm_closes",
            setting="FC net, MNIST 2 vs 7, ERM (eps 0)",
            claim="Under plain ERM the two algorithms' test accuracies are close.",
            paper="close (Fig. 3 left)",
            measure="SD - GD clean test accuracy (points), per seed",
            rule=between("SD - GD", (-1.0, 1.0), (-2.0, 2.0)),
            compute=fc_erm,
            applies=_needs("fc"),
        ),
        Claim(
            id="price_nn.cnn_gd_ahead",
            setting="Madry CNN, MNIST 2 vs 7, robust ERM cells (n, eps > 0)",
            claim="On the non-homogeneous CNN, GD reaches a higher robust test accuracy than "
            "sign descent.",
            paper="GD ahead in the (n, eps) heatmap (Fig. 3 right / Fig. 8)",
            measure="GD - SD robust test accuracy (points; worst case) per (n, eps) cell and "
            "seed, over the cells where every run fit the training set (robust train acc. >= "
            "0.9, training PGD)",
            rule=at_least("GD - SD", 0.5, 0.0),
            compute=cnn_cells,
            applies=_needs("cnn"),
        ),
    ]
