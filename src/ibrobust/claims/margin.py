"""Claims of Study MARGIN (Lyu & Li, ICLR 2020; SPEC.md "Study MARGIN"), kind ``margin``.

Source: ``results/<study>/figures/summary.csv``
(:func:`ibrobust.experiments.margin_report.summary_table`, one row per run and checkpoint;
run-level numbers repeated on each row: ``sep_*`` = after the data is fit, ``cc_*`` = the
FAB-versus-bounds cross-check, ``min_log10_loss``). A study that is not enabled (the default:
it needs MNIST) has its claims "not run" with the reason.
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
    at_most,
)

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
            Column("cc_fab_below_pgd", lo=0, hi=1, nan_ok=True),  # NaN: no cross-check pair
            Column("cc_fab_above_cert", lo=0, hi=1, nan_ok=True),
            Column("train_robust_l2", lo=0, hi=1, nan_ok=True),
            Column("test_robust_l2", lo=0, hi=1, nan_ok=True),
            Column("min_log10_loss"),
            Column("all_finite", lo=0, hi=1),
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
    note = "" if finite.all() else "a run logged a non-finite value (counted as 0)"
    return Measurement(vals, unit="runs", note=note)


def first_to_last(col: str, ratio: bool):
    """Per run: the last checkpoint's ``col`` over (or minus) the first checkpoint's."""

    def compute(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
        out = []
        for _, g in src["summary"].groupby("run", sort=False):
            g = g.sort_values("epoch")
            if len(g) < 2 or g[col].isna().any():
                continue
            a, b = float(g[col].iloc[0]), float(g[col].iloc[-1])
            out.append(b / a if ratio else b - a)
        if not out:
            raise NotRun(f"no run with two checkpoints and {col!r}")
        return Measurement(tuple(out), unit="runs")

    return compute


def bounds(src: Mapping[str, pd.DataFrame], ctx: StudyContext) -> Measurement:
    df = src["summary"]
    below, above = _per_run(df, "cc_fab_below_pgd"), _per_run(df, "cc_fab_above_cert")
    return Measurement(tuple(min(a, b) for a, b in zip(below, above, strict=True)), unit="runs")


def claims(ctx: StudyContext) -> list[Claim]:
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
        Claim(
            id="margin.robust_rises_train",
            setting="checkpoints, train points, l2",
            claim="Longer training raises robust accuracy slightly (more on train than test).",
            paper="slightly higher for later models (robustness table)",
            measure="l2 robust accuracy at the grid's middle eps: last checkpoint - first",
            rule=at_least("difference", 0.0, -0.05),
            compute=first_to_last("train_robust_l2", ratio=False),
        ),
        Claim(
            id="margin.robust_rises_test",
            setting="checkpoints, test points, l2",
            claim="Longer training raises robust accuracy slightly on test points.",
            paper="slightly higher for later models (less than on train)",
            measure="l2 robust accuracy at the grid's middle eps: last checkpoint - first",
            rule=at_least("difference", 0.0, -0.05),
            compute=first_to_last("test_robust_l2", ratio=False),
        ),
        Claim(
            id="margin.fab_between_bounds",
            setting="cross-check sample",
            claim="The minimal-norm attack's distance lies between the certificate q / beta "
            "and the l2 PGD-bisection upper bound.",
            paper="R(z) >= q(z) / beta (seeds)",
            measure="fraction of cross-check points with q / beta <= FAB <= PGD bisection "
            "(the smaller of the two fractions)",
            rule=at_least("fraction", 0.95, 0.8),
            compute=bounds,
        ),
    ]
