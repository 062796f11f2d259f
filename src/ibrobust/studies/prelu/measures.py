"""What the claims of Study PRELU measure (:mod:`ibrobust.studies.prelu.claims` declares
them): the files read (:data:`SOURCES`) and per claim one value per seed.

Synthetic half: ``results/<study>/figures/summary.csv``
(:func:`ibrobust.studies.prelu.tables.synthetic_summary`, one row per run and seed), judged at
the study's figure noise level. MNIST half: ``table1.csv``
(:func:`ibrobust.studies.prelu.tables.table1`, one row per model and Table-1 column with the
mean and std over seeds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial

import pandas as pd

from ibrobust.analysis.ideal_radius import mixture_coordinates, prelu_radius, robust_accuracy
from ibrobust.analysis.readoff import grid_bracket
from ibrobust.claims.core import Column, Measurement, NotRun, Source, StudyContext
from ibrobust.claims.intervals import newcombe
from ibrobust.claims.measurement import one_per_run
from ibrobust.data.clusters import config_from_dict
from ibrobust.studies.prelu.tables import REFINED, column_name

RADIUS = "critical_radius"  # 50 % point of the worst case over attacks; NaN: off the grid
ACC_BELOW = "robust_acc@0.9sqrt(2)/2"  # claims prelu.p<p>_robust_below
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
            Column("robust_acc@0.9sqrt(2)/2", lo=0, hi=1, nan_ok=True, required=False),
            Column(f"{ACC_BELOW}.lo", lo=0, hi=1, nan_ok=True, required=False),
            Column(f"{ACC_BELOW}.hi", lo=0, hi=1, nan_ok=True, required=False),
            *(Column(c, lo=0, nan_ok=True, required=False) for c in REFINED),
            Column("n_points", lo=1, required=False),
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


def measured_points(sel: pd.DataFrame) -> int | None:
    """The test points each run was attacked on, read from the summary (``n_points``; None
    for a summary from before the column, or runs that differ: the fewest then)."""
    if "n_points" not in sel or sel["n_points"].isna().any():
        return None
    return int(sel["n_points"].min())


def radius_over(p: float, reference):
    """Per seed: the critical radius of the p nets over ``reference``. Refined (the per-point
    bisection of rule prelu_refine, :data:`REFINED`) where every selected run has it: each
    value's read-off bracket is the 50 % point's bracket, as wide as the bisection's
    tolerance; else the grid's interpolated radius with its grid cell as the bracket
    (:func:`ibrobust.analysis.readoff.grid_bracket`)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        sel = _runs(src["summary"], ctx, p)
        ref = reference(ctx)
        grid = [float(r) for r in ctx.config["synthetic"]["radii"]]
        top = max(grid)
        value, lo, hi = REFINED
        if value in sel and sel[value].notna().all():
            cens = bool((sel[hi] == math.inf).any())
            v, b = (
                sel[value],
                list(zip(sel[lo], sel[hi].where(sel[hi] < math.inf, sel[lo]), strict=True)),
            )
            tol = (ctx.config["synthetic"].get("refine") or {}).get("tolerance")
            how = "per-point bisection" + (f" to {float(tol):g}" if tol is not None else "")
            resolution = f"{how}: the 50 % point's bracket"
        else:
            cens = bool(sel[RADIUS].isna().any())
            v = sel[RADIUS].fillna(top)
            b = [grid_bracket(grid, float(r)) for r in v]
            b = [(a, c if c < math.inf else a) for a, c in b]  # censored: its own flag
            widths = sorted({round(c - a, 12) for a, c in b})
            resolution = "the radius grid's cell, " + ", ".join(f"{w:g}" for w in widths) + " wide"
        return Measurement(
            tuple(v / ref),
            lower_bound=cens,
            points=measured_points(sel),
            brackets=tuple((float(a) / ref, float(c) / ref) for a, c in b),
            resolution=resolution,
        )

    return compute


def column(p: float, col: str):
    """Per seed: ``col`` of the p nets; with its read-off bracket where the summary has one
    (``<col>.lo`` / ``<col>.hi``: an accuracy interpolated between two grid radii)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        if col not in src["summary"]:  # an optional column (SOURCES): a summary from before it
            raise NotRun(f"the summary has no {col!r} (written before the claim read it)")
        sel = _runs(src["summary"], ctx, p)
        v, _ = one_per_run(sel[col], col, f"p={p:g}")
        lo, hi = f"{col}.lo", f"{col}.hi"
        if lo in sel and hi in sel and sel[[lo, hi]].notna().all().all():
            return Measurement(
                v,
                brackets=tuple(zip(sel[lo].astype(float), sel[hi].astype(float), strict=True)),
                resolution="interpolated between the two radius-grid points around it",
                points=measured_points(sel),
            )
        return Measurement(v)

    return compute


IDEAL_POINTS = 2000  # draws of the study's mixture for F^(p)'s robust accuracy (claims
IDEAL_SEED = 0  # prelu.p<p>_robust_below): a fixed sample, so the reference is a constant


def ideal_robust_accuracy(ctx: StudyContext, p: float, radius: float) -> tuple[float, float]:
    """The ideal F^(p)'s robust accuracy at l2 ``radius`` on the study's own mixture (its
    dataset's K, D, class split and centre norm, noise alpha / sqrt(D) at the figure alpha):
    :data:`IDEAL_POINTS` draws, each point's radius bracketed by
    :func:`ibrobust.analysis.ideal_radius.prelu_radius`; a (lo, hi) bracket."""
    entry = dict(ctx.datasets[ctx.config["synthetic"]["dataset"]])
    entry["alpha"] = figure_alpha(ctx)
    cfg = config_from_dict(entry)
    z, sign, y = mixture_coordinates(
        cfg.k, cfg.positive_clusters, cfg.noise_std, cfg.norm, IDEAL_POINTS, IDEAL_SEED
    )
    return robust_accuracy(*prelu_radius(z, sign, y, p), radius)


def ideal_ratio(p: float, col: str, radius: float):
    """Per seed: the p nets' robust accuracy ``col`` (at l2 ``radius``) over the ideal F^(p)'s
    at the same radius on the study's mixture (:func:`ideal_robust_accuracy`; its upper end,
    so the ratio is the smaller one). The bracket of each ratio combines the net's read-off
    bracket (the radius grid) with F^(p)'s."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        net = column(p, col)(src, ctx)
        ref_lo, ref_hi = ideal_robust_accuracy(ctx, p, radius)
        if ref_hi <= 0:
            raise NotRun(f"the ideal F^({p:g}) keeps no point at radius {radius:.3f}")
        nb = net.brackets or tuple((v, v) for v in net.values)
        lo_den = ref_lo if ref_lo > 0 else ref_hi
        return Measurement(
            tuple(v / ref_hi for v in net.values),
            brackets=tuple((a / ref_hi, b / lo_den) for a, b in nb),
            resolution="the net's accuracy interpolated on the radius grid; F^(p)'s bracketed "
            f"per point ({IDEAL_POINTS} draws)",
            points=net.points,
            note=f"ideal F^({p:g}) robust accuracy at {radius:.3f}: [{ref_lo:.3f}, {ref_hi:.3f}] "
            f"on {IDEAL_POINTS} draws of the study's mixture",
        )

    return compute


def table1_gap(norm: str, eps: float, task: str = "10-class"):
    """Ours: robust accuracy of the p=4 minus the p=1 net of ``task`` (the 10-class nets of
    Table 1, or the 2-class parity nets) at a Table-1 column: per seed (t interval over
    seeds) with several seeds; with one seed, Newcombe's interval of the difference of two
    accuracies over the attacked points (unpaired, so conservative: the two nets' errors on
    the same points correlate)."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        t = src["table1"]
        t = t[(t["task"] == task) & (t["column"] == column_name(norm, eps))]
        by_p = {}
        for p in (1, 4):
            row = t[(t["p"] - p).abs() < 1e-9]
            if row.empty:
                raise NotRun(f"no {task} p={p} row for {column_name(norm, eps)}")
            if len(row) > 1:
                raise ValueError(f"{len(row)} {task} p={p} rows for {column_name(norm, eps)}")
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


def parity_gap(norm: str, eps: float):
    """:func:`table1_gap` on the 2-class (parity) task."""
    return table1_gap(norm, eps, task="2-class")


def _seed_values(row: pd.Series) -> list[float]:
    return [float(v) for v in str(row["per_seed"]).split()]
