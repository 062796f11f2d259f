"""What Study FA's claim file (``claims.yaml``) names: the measures it calls (:data:`MEASURES`,
from :mod:`.measures` and :mod:`.sweep_measures`), the functions of
the configuration it reads (:data:`CONTEXT`: the datasets with their d and k and the bounds
the derivations compute from them, the trained-net cells, the readouts, the scopes where a
claim is testable) and the named numbers its texts show (:data:`CONSTANTS`). Every bound a
rule takes from d or k is one function here, tested (tests/unit/test_fa_claim_context.py)."""

from __future__ import annotations

import math

import pandas as pd

from ibrobust.claims.core import StudyContext
from ibrobust.studies.feature_averaging.measures import (
    BINARY,
    MULTICLASS,
    NEAR_ZERO,
    REFERENCE,
    REFERENCE_KIND,
    SETTING,
    clean_accuracy,
    column_of,
    d_and_k,
    first_order_ratio,
    kclass_clean_accuracy,
    kclass_over_binary,
    near_zero_radius,
    readouts_of,
    reference_over_sqrt_d,
    span_residual,
    universal_over_theory,
)
from ibrobust.studies.feature_averaging.reading import TOL
from ibrobust.studies.feature_averaging.sweep_measures import base_cell, scaling_slope, sweep_slope

# the standard normal's 90 % quantile: the idealised net's points keep 10 % robust up to it
Z_NEAR_ZERO = 1.2816
# the readouts whose rule the claim file states apart (the others: the direction only)
NAMED_READOUTS = ("argmax", "sum")


def binary_strong_hi(d: int, k: int) -> float:
    """fa.binary_radius's strong bound: the idealised two-neuron net's radius (over sqrt(d/k))
    at which the universal direction leaves NEAR_ZERO of the points robust, plus 10 % (P2,
    one-sided): each point of the averaged net flips at (d + N(0, kd))/sqrt(kd), i.e. at
    1 + sqrt(k/d) Z x sqrt(d/k), so 10 % survive to 1 + 1.2816 sqrt(k/d)."""
    return round((1 + TOL) * (1 + Z_NEAR_ZERO * math.sqrt(k / d)), 3)


def robust_order(k: int) -> float:
    """The robust construction's strong region's start 0.4 sqrt(d) in units of sqrt(d/k):
    0.4 sqrt(k), rounded to 1e-3 (the radius claims' weak end)."""
    return round(0.4 * math.sqrt(k), 3)


def reference_order(k: int) -> float:
    """The averaging net's order sqrt(d/k) in units of sqrt(d): 1/sqrt(k), rounded to 1e-3."""
    return round(1 / math.sqrt(k), 3)


def gradient_ratio(k: int) -> float:
    """The theory's first-order distance ratio sqrt(k/8), rounded to 1e-3."""
    return round(math.sqrt(k / 8), 3)


def dataset_bounds(d: int, k: int) -> dict:
    """Every number Study FA's per-dataset claims take from d and k (their rules, derivations
    and scopes), by name."""
    hi, robust = binary_strong_hi(d, k), robust_order(k)
    ratio = math.sqrt(k / 2)
    c = gradient_ratio(k)
    return dict(
        d=d, k=k,
        robust=robust,
        binary_hi=hi, binary_weak_hi=max(robust, hi),
        universal_hi=1 + TOL, universal_weak_hi=max(robust, 1 + TOL),
        inv_k=1 / k, inv_k_rounded=round(1 / k, 3),
        block=1 / math.sqrt(k / 2),
        averaging_mid=(1 + math.sqrt(2 / k)) / 2,
        averaging_mid_rounded=round((1 + math.sqrt(2 / k)) / 2, 2),
        decoupled_cosine=math.sqrt(2 / k),
        cosine_scale=ratio,
        readout_ratio=ratio,
        readout_lo=round(ratio * (1 - TOL), 2), readout_hi=round(ratio * (1 + TOL), 2),
        sum_cap=round(math.sqrt(2 * k / (k + 2)), 3),
        inv_sqrt_k=1 / math.sqrt(k), inv_sqrt_k_rounded=reference_order(k),
        reference_weak=min(0.4, reference_order(k)),
        gradient_ratio=c,
        gradient_lo=round(c * (1 - TOL), 3), gradient_hi=round(c * (1 + TOL), 3),
        gradient_weak_lo=min(1.0, round(c * (1 - TOL), 3)),
        gradient_ratio_less=c * (1 - TOL),
    )  # fmt: skip


def datasets(ctx: StudyContext) -> list[dict]:
    """The study's datasets in order, each with its name, tag and :func:`dataset_bounds`."""
    out = []
    for ds in ctx.config["datasets"]:
        d, k = d_and_k(ctx, ds)
        out.append(dict(name=ds, tag=f"{ds} (d={d}, k={k})", **dataset_bounds(d, k)))
    return out


def cells(ctx: StudyContext) -> list[dict]:
    """The trained-net cells (model x optimizer) the per-dataset claims are restricted to:
    one empty cell (no restriction) where the study trains one net per dataset."""
    cfg = ctx.config
    out = [dict(model=m, optimizer=o) for m in cfg["models"] for o in cfg["optimizers"]]
    return [{}] if len(out) == 1 else out


def readouts(ctx: StudyContext) -> list[dict]:
    """The binary readouts the study evaluates, each with the case of fa.kclass_over_binary's
    rule it takes (argmax, sum, or another readout)."""
    return [
        dict(name=ro, readout_case=ro if ro in NAMED_READOUTS else "other")
        for ro in readouts_of(ctx)
    ]


def reference_rows(df: pd.DataFrame) -> pd.Series:
    """The robust reference's rows (shared by every trained net of the study): by its setting
    or label, or (the robust-accuracy curves) by its model kind."""
    for col, value in ((SETTING, REFERENCE), ("label", REFERENCE), ("model_kind", REFERENCE_KIND)):
        if col in df:
            return df[col] == value
    return pd.Series(False, index=df.index)


# ---- where a claim is testable (None, or why not) -------------------------------------------
def radius_scope(ctx: StudyContext, k: int, strong_hi: float) -> str | None:
    """The radius claims' scope: their weak region (non-robust: below the robust
    construction's 0.4 sqrt(k) x sqrt(d/k)) contains the strong one only where 0.4 sqrt(k)
    exceeds the strong upper bound (at d = 1000: k >= 10 for fa.binary_radius, whose bound
    1.1 x (1 + 1.2816 sqrt(k/d)) grows with k, k >= 8 for fa.universal_radius). At a smaller
    k the study cannot tell an averaging net's radius from the robust construction's, so the
    claim is not applicable there (the rule shown keeps the strong region; no verdict)."""
    robust = robust_order(k)
    if robust > strong_hi:
        return None
    return (
        f"at k = {k} the robust construction's radius 0.4 sqrt(k) = {robust} x sqrt(d/k) is "
        f"not above the strong region's end {strong_hi:g}: the study cannot separate a "
        "non-robust radius of order sqrt(d/k) from a robust one"
    )


def reference_scope(ctx: StudyContext, k: int) -> str | None:
    """fa.reference_radius: the averaging net's order 1/sqrt(k) x sqrt(d) is below the
    construction's 0.4 only for k >= 7; at a smaller k the two orders cannot be told apart."""
    weak = reference_order(k)
    if weak < 0.4:
        return None
    return (
        f"at k = {k} the averaging net's order sqrt(d/k) = {weak} x sqrt(d) is not below the "
        "construction's 0.4 x sqrt(d): the study cannot separate the robust radius from the "
        "non-robust one (the source's k is 10)"
    )


def gradient_scope(ctx: StudyContext, k: int) -> str | None:
    """fa.gradient_per_margin: the derivation's ratio sqrt(k/8) less 10 % exceeds the
    direction's 1 only for k >= 10."""
    c = gradient_ratio(k)
    if c * (1 - TOL) > 1.0:
        return None
    return (
        f"at k = {k} the theory's ratio sqrt(k/8) = {c} (less 10 %: {c * (1 - TOL):.3f}) is not "
        "above 1: the averaged and the robust net's first-order distances are not separated "
        "there (the claim's direction needs k >= 10; the source's k is 10)"
    )


def scaling_missing(ctx: StudyContext, key: str) -> str | None:
    """A sweep claim's ``applies``: not run without a scaling sweep over ``key``."""
    sc = ctx.config.get("scaling")
    if sc is None:
        return "the study has no scaling sweep"
    if key not in sc.get("sweeps", {}):
        return f"the scaling sweeps are over {sorted(sc.get('sweeps', {}))}, not {key}"
    return None


# ---- measures the file names with arguments a YAML value cannot carry -----------------------
def cosine_over_theory(dataset: str, k: int):
    """Per 2-class seed: the mean same-class cosine x sqrt(k/2) (1 = the averaged net's)."""
    return column_of(dataset, (BINARY,), "cosine_same_class_mean", math.sqrt(k / 2))


def sweep_trend(supervision: str, column: str, diagnostic: str | None = None, shown: str = ""):
    """The slope of a final-checkpoint lambda column on ln d over the scaling sweep
    (:func:`.sweep_measures.sweep_slope`), with the base cell's ``diagnostic`` column (shown
    as ``shown`` where the sweep's nets are not decomposed)."""
    diag = base_cell(diagnostic, supervision, shown) if diagnostic else None
    return sweep_slope(supervision, column, diagnostic=diag)


MEASURES = {
    "near_zero_radius": near_zero_radius,
    "universal_over_theory": universal_over_theory,
    "reference_over_sqrt_d": reference_over_sqrt_d,
    "clean_accuracy": clean_accuracy,
    "kclass_clean_accuracy": kclass_clean_accuracy,
    "cosine_over_theory": cosine_over_theory,
    "span_residual": span_residual,
    "kclass_over_binary": kclass_over_binary,
    "first_order_ratio": first_order_ratio,
    "scaling_slope": scaling_slope,
    "sweep_trend": sweep_trend,
    "reference_rows": reference_rows,  # a group's restrict.keep: the rows every cell shares
}
CONTEXT = {
    "datasets": datasets,
    "cells": cells,
    "readouts": readouts,
    "radius_scope": radius_scope,
    "reference_scope": reference_scope,
    "gradient_scope": gradient_scope,
    "scaling_missing": scaling_missing,
}
CONSTANTS = {"near_zero": NEAR_ZERO, "binary": BINARY, "multiclass": MULTICLASS}
