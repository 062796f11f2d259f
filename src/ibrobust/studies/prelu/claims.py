"""Claims of Study PRELU (Min & Vidal, ICML 2024; docs/studies/prelu.md, "Claims"), kind
``prelu``.

Synthetic half: ``results/<study>/figures/summary.csv``
(:func:`ibrobust.studies.prelu.tables.synthetic_summary`, one row per run and seed), judged at
the study's figure noise level. MNIST half: ``table1.csv``
(:func:`ibrobust.studies.prelu.tables.table1`, one row per model and Table-1 column with the
mean and std over seeds). The column mapping is :data:`SOURCES` and the constants below.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

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
    between,
)
from ibrobust.claims.intervals import newcombe
from ibrobust.studies.prelu.radii import PRELU_ROBUST_RADIUS, relu_nonrobust_radius
from ibrobust.studies.prelu.tables import PAPER_TABLE1, TABLE1_COLUMNS, column_name

RADIUS = "critical_radius"  # 50 % point of the worst case over attacks; NaN: off the grid
SOURCES: dict[str, Source] = {
    "summary": Source(
        path="figures/summary.csv",
        keys={"dataset": None, "supervision": None},
        numeric=(
            Column("seed", lo=0),
            Column("p", lo=1),
            Column("alpha", lo=0),
            Column("clean_acc", lo=0, hi=1),
            Column(RADIUS, lo=0, nan_ok=True),
            Column("frac_single", lo=0, hi=1, nan_ok=True),  # NaN: no active neuron
            Column("frac_average", lo=0, hi=1, nan_ok=True),
            Column("dist_F", lo=0, hi=1),
            Column("dist_Fp", lo=0, hi=1),
        ),
        checks=(
            lambda df: (
                None
                if ((df["frac_single"] + df["frac_average"] - 1).abs().fillna(0) < 1e-6).all()
                else "columns 'frac_single' and 'frac_average' do not add up to 1"
            ),
        ),
        built_by="the study's target (and the default target: the synthetic half)",
    ),
    "table1": Source(
        path="figures/table1.csv",
        keys={
            "dataset": None,
            "task": ("2-class", "10-class"),
            "column": None,
            "n_points": None,  # a number, or "full test split" (the clean column)
        },
        numeric=(
            Column("p", lo=1, nan_ok=True),
            Column("eps", lo=0),
            Column("ours", lo=0, hi=1),
            Column("ours_std", lo=0, hi=1),
            Column("seeds", lo=1),
        ),
        built_by="`snakemake prelu --config data_root=DIR` (the MNIST half, not in the "
        "default target)",
    ),
}


def figure_alpha(ctx: StudyContext) -> float:
    """The noise level the synthetic claims are judged at (the study's figure alpha; the
    rule of rules/common.smk's prelu_labels when unset)."""
    syn = ctx.config["synthetic"]
    if syn.get("figure_alpha") is not None:
        return float(syn["figure_alpha"])
    alphas = sorted(float(a) for a in syn["alphas"])
    return alphas[(len(alphas) - 1) // 2]


def k_of(ctx: StudyContext) -> int:
    return int(ctx.datasets[ctx.config["synthetic"]["dataset"]]["k"])


def _runs(df: pd.DataFrame, ctx: StudyContext, p: float) -> pd.DataFrame:
    a = figure_alpha(ctx)
    sel = df[((df["alpha"] - a).abs() < 1e-9) & ((df["p"] - p).abs() < 1e-9)]
    sel = sel[sel["supervision"] == "binary"]
    if sel.empty:
        raise NotRun(f"no binary p={p:g} run at alpha={a:g} in the summary")
    return sel


def radius_over(p: float, reference):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        sel = _runs(src["summary"], ctx, p)
        top = max(float(r) for r in ctx.config["synthetic"]["radii"])
        r = sel[RADIUS].fillna(top)
        return Measurement(
            tuple(r / reference(ctx)),
            lower_bound=bool(sel[RADIUS].isna().any()),
            points=ctx.config["synthetic"].get("attack_points"),
        )

    return compute


def column(p: float, col: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        v = _runs(src["summary"], ctx, p)[col]
        if v.isna().any():
            raise ValueError(f"column {col!r} is NaN for a p={p:g} run")
        return Measurement(tuple(v))

    return compute


def table1_gap(norm: str, eps: float):
    """Ours: robust accuracy of the p=4 minus the p=1 10-class net at a Table-1 column: per
    seed (t interval over seeds) with several seeds; with one seed, Newcombe's interval of
    the difference of two accuracies over the attacked points (unpaired, so conservative:
    the two nets' errors on the same points correlate)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        t = src["table1"]
        t = t[(t["task"] == "10-class") & (t["column"] == column_name(norm, eps))]
        by_p = {}
        for p in (1, 4):
            row = t[(t["p"] - p).abs() < 1e-9]
            if row.empty:
                raise NotRun(f"no 10-class p={p} row for {column_name(norm, eps)}")
            if len(row) > 1:
                raise ValueError(f"{len(row)} 10-class p={p} rows for {column_name(norm, eps)}")
            by_p[p] = row.iloc[0]
        hi, lo = by_p[4], by_p[1]
        note = f"p=4 {hi['ours']:.3f} vs p=1 {lo['ours']:.3f}"
        points = int(min(float(hi["n_points"]), float(lo["n_points"])))  # robust columns
        a, b = _seed_values(hi), _seed_values(lo)
        if len(a) != len(b):
            raise ValueError(f"{len(a)} p=4 seeds but {len(b)} p=1 seeds")
        diffs = tuple(x - y for x, y in zip(a, b, strict=True))
        if len(diffs) > 1:
            return Measurement(diffs, note=note, points=points)
        iv = partial(newcombe, float(hi["ours"]), points, float(lo["ours"]), points)
        return Measurement(diffs, note=note, points=points, interval=iv)

    return compute


def _seed_values(row: pd.Series) -> list[float]:
    return [float(v) for v in str(row["per_seed"]).split()]


def _mnist(ctx: StudyContext) -> str | None:
    return "the MNIST half is not configured" if ctx.config.get("mnist") is None else None


def claims(ctx: StudyContext) -> list[Claim]:
    """The synthetic half's claims at the figure noise level (when the half is configured)
    and one Table-1 claim per column (not run when the MNIST half is not configured)."""
    out: list[Claim] = []
    if ctx.config.get("synthetic") is not None:
        syn = f"synthetic, K={k_of(ctx)}, alpha={figure_alpha(ctx):g}"
        out += _radius_claims(syn, k_of(ctx)) + _alignment_claims(syn)
    return out + [_table1_claim(norm, eps) for norm, eps in TABLE1_COLUMNS]


def _radius_claims(syn: str, k: int) -> list[Claim]:
    out = [
        Claim(
            id="prelu.relu_radius",
            setting=f"{syn}, p=1",
            claim="A ReLU net (p=1) trained by GD is not robust beyond ~1/sqrt(K).",
            paper=f"1/sqrt(K) = {relu_nonrobust_radius(k):.3f} (theorem; Fig. 3)",
            measure="critical_radius (50% of the worst case over attacks) x sqrt(K), per seed",
            rule=between("critical radius x sqrt(K)", (0.7, 1.3), (0.5, 1.6)),
            compute=radius_over(1.0, lambda c: relu_nonrobust_radius(k_of(c))),
        ),
    ]
    for p in (3.0, 4.0):
        out.append(
            Claim(
                id=f"prelu.p{p:g}_radius",
                setting=f"{syn}, p={p:g}",
                claim="A pReLU net with p > 2 is robust up to ~sqrt(2)/2.",
                paper=f"sqrt(2)/2 = {PRELU_ROBUST_RADIUS:.3f} (theorem; Fig. 3)",
                measure="critical_radius / (sqrt(2)/2), per seed (NaN = robust on the "
                "whole grid: the grid's top, a lower bound)",
                rule=at_least("critical radius / (sqrt(2)/2)", 0.8, 0.5),
                compute=radius_over(p, lambda c: PRELU_ROBUST_RADIUS),
            )
        )
    return out


def _alignment_claims(syn: str) -> list[Claim]:
    return [
        Claim(
            id="prelu.relu_averages",
            setting=f"{syn}, p=1",
            claim="ReLU neurons align with class averages (f_1 ~ F, two averaged neurons).",
            paper="F (poster conjecture; Fig. 2)",
            measure="frac_average (active neurons closer to a class average than to any "
            "single centre) of the p=1 nets",
            rule=at_least("frac_average", 0.8, 0.5),
            compute=column(1.0, "frac_average"),
        ),
        Claim(
            id="prelu.p3_single",
            setting=f"{syn}, p=3",
            claim="pReLU neurons (p > 2) align with single cluster centres (f_p ~ F^(p)).",
            paper="F^(p) (poster conjecture; Fig. 2)",
            measure="frac_single of the p=3 nets",
            rule=at_least("frac_single", 0.8, 0.5),
            compute=column(3.0, "frac_single"),
        ),
        Claim(
            id="prelu.relu_dist_F",
            setting=f"{syn}, p=1",
            claim="The trained ReLU net is close to the ideal averaged classifier F.",
            paper="f_1 ~ F up to scale (conjecture)",
            measure="dist_F = min_c ||c f - F|| / ||F|| on the centres' unit sphere",
            rule=at_most("dist_F", 0.2, 0.4),
            compute=column(1.0, "dist_F"),
        ),
        Claim(
            id="prelu.p3_dist_Fp",
            setting=f"{syn}, p=3",
            claim="The trained p=3 net is close to the ideal per-cluster classifier F^(p).",
            paper="f_p ~ F^(p) up to scale (conjecture)",
            measure="dist_Fp of the p=3 nets",
            rule=at_most("dist_Fp", 0.2, 0.4),
            compute=column(3.0, "dist_Fp"),
        ),
    ]


def _table1_claim(norm: str, eps: float) -> Claim:
    paper = PAPER_TABLE1[(norm, eps)]
    gap = paper[4] - paper[1]
    return Claim(
        id=f"prelu.mnist_{norm}_{eps:g}",
        setting=f"MNIST 10-class, {column_name(norm, eps)}",
        claim="On MNIST, p=4 pReLU nets are more robust than ReLU nets (Table 1).",
        paper=f"{paper[4]:.3f} vs {paper[1]:.3f}: +{gap:.3f}",
        measure="table1.csv: ours (worst case over the grid's attacks) of the p=4 "
        "minus the p=1 10-class net",
        rule=at_least("p=4 minus p=1 robust accuracy", round(gap / 2, 4), 0.0),
        compute=table1_gap(norm, eps),
        sources=("table1",),
        applies=_mnist,
    )
