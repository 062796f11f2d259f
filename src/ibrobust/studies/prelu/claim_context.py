"""What Study PRELU's claim file (``claims.yaml``) names: the measures it calls
(:data:`MEASURES`, from :mod:`.measures`) and the functions of the configuration it reads
(:data:`CONTEXT`: whether each half is configured, K, the figure's noise level, the bounds
computed from K, the Table-1 columns with the paper's numbers)."""

from __future__ import annotations

import math

from ibrobust.claims.core import StudyContext
from ibrobust.studies.prelu.measures import (
    ACC_BELOW,
    column,
    figure_alpha,
    ideal_ratio,
    k_of,
    parity_gap,
    radius_over,
    table1_gap,
)
from ibrobust.studies.prelu.radii import PRELU_ROBUST_RADIUS, relu_nonrobust_radius
from ibrobust.studies.prelu.tables import PAPER_TABLE1, TABLE1_COLUMNS, column_name


def radius_over_theory(p: float):
    """Per seed: the critical radius of the p nets over the ReLU theorem's 1/sqrt(K)."""
    return radius_over(p, lambda ctx: relu_nonrobust_radius(k_of(ctx)))


def ideal_ratio_below(p: float):
    """Per seed: the p nets' robust accuracy at 0.9 sqrt(2)/2 over the ideal F^(p)'s there."""
    return ideal_ratio(p, ACC_BELOW, 0.9 * PRELU_ROBUST_RADIUS)


def synthetic_configured(ctx: StudyContext) -> bool:
    return ctx.config.get("synthetic") is not None


def mnist_missing(ctx: StudyContext) -> str | None:
    """A Table-1 claim's ``applies``: not run without the MNIST half."""
    return "the MNIST half is not configured" if ctx.config.get("mnist") is None else None


def prelu_radius_over_relu(ctx: StudyContext) -> float:
    """The pReLU theorem's robust radius sqrt(2)/2 in units of the ReLU one, 1/sqrt(K):
    sqrt(2K)/2, rounded to 1e-3 (prelu.relu_radius's weak upper bound)."""
    return round(math.sqrt(2 * k_of(ctx)) / 2, 3)


def relu_radius(ctx: StudyContext) -> float:
    """1/sqrt(K) of the study's synthetic data."""
    return relu_nonrobust_radius(k_of(ctx))


def table1_columns(ctx: StudyContext) -> list[dict]:
    """Table 1's columns in order, each with its name and the paper's p=4 and p=1 robust
    accuracies and their gap (shown for reference)."""
    out = []
    for norm, eps in TABLE1_COLUMNS:
        paper = PAPER_TABLE1[(norm, eps)]
        out.append(dict(norm=norm, eps=eps, column=column_name(norm, eps), p4=paper[4],
                        p1=paper[1], gap=paper[4] - paper[1]))  # fmt: skip
    return out


MEASURES = {
    "column": column,
    "radius_over_theory": radius_over_theory,
    "ideal_ratio_below": ideal_ratio_below,
    "table1_gap": table1_gap,
    "parity_gap": parity_gap,
}
CONTEXT = {
    "synthetic_configured": synthetic_configured,
    "mnist_missing": mnist_missing,
    "k": k_of,
    "figure_alpha": figure_alpha,
    "prelu_radius_over_relu": prelu_radius_over_relu,
    "relu_radius": relu_radius,
    "table1_columns": table1_columns,
}
