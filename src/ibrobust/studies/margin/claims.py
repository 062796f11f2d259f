"""Claims of Study MARGIN (Lyu & Li, ICLR 2020; docs/studies/margin.md, "Claims"), kind
``margin``.

Sources: ``results/<study>/figures/summary.csv``
(:func:`ibrobust.studies.margin.tables.summary_table`, one row per run and checkpoint;
run-level numbers repeated on each row: ``sep_*`` = after the data is fit, ``cert_*`` = the
certificate check, ``min_log10_loss``) and ``points.csv`` (every run's per-point minimal
distances, the smallest over the attacks, and certificates). Run-level numbers get a t
interval over runs (seeds); with one run, the robust-accuracy claims fall back to a
bootstrap over the test points of the per-point paired difference, and the certificate
claim is a Wilson interval over the (point, checkpoint) pairs. A study that is not enabled
(the default: it needs MNIST) has its claims "not run" with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
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
)
from ibrobust.claims.intervals import Interval, bootstrap_mean, wilson

SOURCES: dict[str, Source] = {
    "summary": Source(
        path="figures/summary.csv",
        keys={"run": None, "name": None},
        numeric=(
            Column("epoch", lo=0),
            Column("log10_train_loss"),
            Column("normalized_margin"),
            Column("smoothed_normalized_margin"),
            Column("sep_frac_decreasing", lo=0, hi=1, nan_ok=True),  # NaN: never fit
            Column("cert_frac_holding", lo=0, hi=1, nan_ok=True),  # NaN: no certificate
            Column("train_robust_l2", lo=0, hi=1, nan_ok=True),
            Column("test_robust_l2", lo=0, hi=1, nan_ok=True),
            Column("min_log10_loss"),
            Column("all_finite", lo=0, hi=1),
        ),
        built_by="`snakemake margin --config data_root=DIR` (not in the default target)",
    ),
    "points": Source(
        path="figures/points.csv",
        keys={"run": None, "checkpoint": None, "split": ("train", "test")},
        numeric=(
            Column("index", lo=0),
            Column("margin"),
            Column("distance_l2", lo=0, nan_ok=True),  # NaN: no attack reached this point
            Column("certified_l2", lo=0, nan_ok=True),  # NaN: no certificate for the net
        ),
        built_by="`snakemake margin --config data_root=DIR` (not in the default target)",
    ),
}


def _per_run(df: pd.DataFrame, col: str) -> tuple[float, ...]:
    v = df.groupby("run", sort=False)[col].first()
    if v.isna().all():
        raise NotRun(f"column {col!r} is NaN for every run")
    return tuple(float(x) for x in v.dropna())


def run_column(col: str):
    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        return Measurement(_per_run(src["summary"], col), unit="runs")

    return compute


def loss_reached(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Lowest log10 L per run; a run with a non-finite logged value counts as log10 L = 0
    (not reached), said in the note."""
    df = src["summary"]
    low = df.groupby("run", sort=False)["min_log10_loss"].first()
    finite = df.groupby("run", sort=False)["all_finite"].min() >= 1
    vals = tuple(float(v) if ok else 0.0 for v, ok in zip(low, finite, strict=True))
    notes = [] if finite.all() else ["a run logged a non-finite value (counted as 0)"]
    stop = ctx.config.get("training", {}).get("stop_log10_loss")
    if stop is not None and stop > -300.0:  # the study stops before the strong region
        notes.append(f"the study stops at log10 L = {stop:g} (training.stop_log10_loss)")
    return Measurement(vals, unit="runs", note="; ".join(notes))


def first_to_last(col: str, ratio: bool):
    """Per run: the last checkpoint's ``col`` over (or minus) the first checkpoint's."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        return Measurement(_first_to_last(src["summary"], col, ratio), unit="runs")

    return compute


def _first_to_last(summary: pd.DataFrame, col: str, ratio: bool) -> tuple[float, ...]:
    out = []
    for _, g in summary.groupby("run", sort=False):
        g = g.sort_values("epoch")
        if len(g) < 2 or g[col].isna().any():
            continue
        a, b = float(g[col].iloc[0]), float(g[col].iloc[-1])
        out.append(b / a if ratio else b - a)
    if not out:
        raise NotRun(f"no run with two checkpoints and {col!r}")
    return tuple(out)


def robust_rise(split: str):
    """Per run: l2 robust accuracy at the grid's middle eps, last checkpoint minus first (t
    over runs). With one run: the per-point paired difference [distance > eps at the last
    checkpoint] - [at the first] over its ``split`` points, bootstrapped over the points."""
    col = f"{split}_robust_l2"

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        vals = _first_to_last(src["summary"], col, ratio=False)
        points = attacked_points(src["points"], split)
        if len(vals) > 1:
            return Measurement(vals, unit="runs", points=points)
        summary = src["summary"].sort_values("epoch")
        eps = float(summary[f"{split}_eps_l2"].iloc[0])
        pts = src["points"][src["points"]["split"] == split]
        first, last = (
            pts[pts["checkpoint"] == name].set_index("index")["distance_l2"].fillna(0.0) > eps
            for name in (summary["name"].iloc[0], summary["name"].iloc[-1])
        )
        both = first.index.intersection(last.index)
        per_point = last[both].astype(float) - first[both].astype(float)
        iv = partial(bootstrap_mean, per_point.to_numpy(), "points")
        note = "one run: bootstrap over its points (the training noise is not in it)"
        return Measurement(vals, unit="runs", points=points, interval=iv, note=note)

    return compute


def attacked_points(points: pd.DataFrame, split: str) -> int:
    """The points of ``split`` each checkpoint was attacked on, read from the outputs (the
    fewest over runs and checkpoints): ``attack_points`` of the config, or fewer where the
    split holds fewer (the train split of a 20-image rung)."""
    per_ck = points[points["split"] == split].groupby(["run", "checkpoint"]).size()
    return int(per_ck.min()) if len(per_ck) else 0


def certificate(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    """Share of the correctly classified (point, checkpoint) pairs, pooled over runs and
    splits, whose minimal l2 distance (smallest over the attacks) is at least the
    certificate q / beta; Wilson interval over the pairs."""
    pts = src["points"]
    b = pts[(pts["margin"] > 0) & pts["certified_l2"].notna() & pts["distance_l2"].notna()]
    if b.empty:
        raise NotRun("no correctly classified point with a certificate")
    ok = b["distance_l2"] >= b["certified_l2"] * (1 - 1e-9)
    unit = "(point, checkpoint) pairs"

    def iv(level: float) -> Interval:
        return replace(
            wilson(int(ok.sum()), len(b), level), unit=unit, method=f"Wilson over {unit}"
        )

    per_run = tuple(float(g.mean()) for _, g in ok.groupby(b["run"], sort=False))
    return Measurement(per_run, unit="runs", interval=iv, note=f"{int(ok.sum())} of {len(b)} pairs")


def claims(ctx: StudyContext) -> list[Claim]:
    return _training_claims() + _robustness_claims()


def _training_claims() -> list[Claim]:
    return [
        Claim(
            id="margin.loss_below_1e-300",
            setting="training",
            claim="The loss-based learning rate drives the train loss far below float64's "
            "range (log10 L recorded, never L) with every logged value finite.",
            paper="10^-881.51 after 10000 epochs (model 5)",
            measure="lowest log10 train loss per run (all_finite must be 1)",
            rule=at_most("log10 L", -300.0, -120.0),
            compute=loss_reached,
        ),
        Claim(
            id="margin.smoothed_monotone",
            setting="after the data is fit",
            claim="The smoothed normalized margin is non-decreasing once the data is fit.",
            paper="monotone under gradient flow (Theorem 4.1); SGD approximates it",
            measure="fraction of accepted epochs after separation in which it decreased",
            rule=at_most("fraction of decreasing epochs", 0.05, 0.25),
            compute=run_column("sep_frac_decreasing"),
        ),
        Claim(
            id="margin.normalized_grows",
            setting="checkpoints",
            claim="The normalized margin grows with training (models 1 to 5).",
            paper="5.65e-5 -> 1.18e-3 (x20.9)",
            measure="normalized margin at the last checkpoint / at the first",
            rule=at_least("ratio", 1.5, 1.0),
            compute=first_to_last("normalized_margin", ratio=True),
        ),
    ]


def _robustness_claims() -> list[Claim]:
    return [
        Claim(
            id="margin.robust_rises_train",
            setting="checkpoints, train points, l2",
            claim="Longer training raises robust accuracy slightly (more on train than test).",
            paper="slightly higher for later models (robustness table)",
            measure="l2 robust accuracy at the grid's middle eps: last checkpoint - first",
            rule=at_least("difference", 0.0, -0.05),
            compute=robust_rise("train"),
            sources=("summary", "points"),
        ),
        Claim(
            id="margin.robust_rises_test",
            setting="checkpoints, test points, l2",
            claim="Longer training raises robust accuracy slightly on test points.",
            paper="slightly higher for later models (less than on train)",
            measure="l2 robust accuracy at the grid's middle eps: last checkpoint - first",
            rule=at_least("difference", 0.0, -0.05),
            compute=robust_rise("test"),
            sources=("summary", "points"),
        ),
        Claim(
            id="margin.certificate",
            setting="every checkpoint, train and test points, l2",
            claim="A point's distance to the decision boundary is at least its certified "
            "radius q / beta (beta: the margin's Lipschitz constant).",
            paper="R(z) >= q(z) / beta (seeds)",
            measure="share of correctly classified (point, checkpoint) pairs whose minimal l2 "
            "distance (the smallest over every attack that ran) is >= q / beta",
            rule=at_least("share", 0.99, 0.95),
            compute=certificate,
            sources=("points",),
        ),
    ]
