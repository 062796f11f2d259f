"""What Study FA's claim file (``claims.yaml``) reads from the configuration (:data:`CONTEXT`,
:mod:`ibrobust.claims.declared`): per dataset its d and k and the rule bounds that follow from
k (the robust construction's 0.4 sqrt(k), the first-order ratio sqrt(k/8), the cosine block
1/sqrt(k/2), ...), the study's trained nets (cells), its readouts, and the scopes where a
claim's regions nest (not applicable elsewhere). The figure readings they use are
:mod:`.reading`'s (:data:`CONSTANTS`, which the file's texts show). Pure functions."""

from __future__ import annotations

import math

from ibrobust.claims.core import StudyContext
from ibrobust.studies.feature_averaging.measures import d_and_k, readouts_of
from ibrobust.studies.feature_averaging.reading import (
    BINARY_READING,
    KCLASS_READING,
    PAPER_D,
    PAPER_K,
    TOL,
)

PAPER_ROOT = math.sqrt(PAPER_D / PAPER_K)  # sqrt(d/k) of the paper's figure, 17.5
CONSTANTS = {
    "paper_d": PAPER_D,
    "paper_k": PAPER_K,
    "paper_root": PAPER_ROOT,
    "binary_reading_lo": BINARY_READING[0],
    "binary_reading_hi": BINARY_READING[1],
    "kclass_reading_lo": KCLASS_READING[0],
    "kclass_reading_hi": KCLASS_READING[1],
    # the 50 % points' ratio the readings allow (argmax readout), rounded to 0.01
    "readout_lo": round(KCLASS_READING[0] / BINARY_READING[1], 2),
    "readout_hi": round(KCLASS_READING[1] / BINARY_READING[0], 2),
    # the 2-class 50 % point over sqrt(d/k) the readings allow, rounded to 1e-3
    "binary_lo": round(BINARY_READING[0] / PAPER_ROOT, 3),
    "binary_hi": round(BINARY_READING[1] / PAPER_ROOT, 3),
}


def datasets(ctx: StudyContext) -> list[dict]:
    """Per dataset of the study (config order): its d, k, the settings' tag and the bounds
    that follow from k: ``robust`` = 0.4 sqrt(k) (the robust construction's 0.4 sqrt(d) in
    units of sqrt(d/k), 1e-3), the radius claims' weak upper ends (``binary_weak_hi`` =
    max(robust, binary_hi), ``universal_weak_hi`` = max(robust, 1 + TOL)), the reference's
    weak end 1/sqrt(k) (``ref_weak``, 1e-3; ``ref_weak_lo`` = min(0.4, it)), the first-order
    ratio ``c`` = sqrt(k/8) (1e-3) with its strong band c (1 -+ TOL) (1e-3) and weak end
    min(1, c (1 - TOL)), the cosine block 1/sqrt(k/2) and its scale sqrt(k/2), and the sum
    readout's cap sqrt(2k/(k+2)) (1e-3)."""
    out = []
    for ds in ctx.config["datasets"]:
        d, k = d_and_k(ctx, ds)
        robust = round(0.4 * math.sqrt(k), 3)
        c = round(math.sqrt(k / 8), 3)
        grad_lo, grad_hi = round(c * (1 - TOL), 3), round(c * (1 + TOL), 3)
        out.append(
            dict(
                dataset=ds, d=d, k=k, tag=f"{ds} (d={d}, k={k})", robust=robust,
                binary_weak_hi=max(robust, CONSTANTS["binary_hi"]),
                universal_weak_hi=max(robust, 1 + TOL),
                ref_weak=round(1 / math.sqrt(k), 3), inv_sqrt_k=1 / math.sqrt(k),
                ref_weak_lo=min(0.4, round(1 / math.sqrt(k), 3)),
                c=c, c_less=c * (1 - TOL), grad_lo=grad_lo, grad_hi=grad_hi,
                grad_weak_lo=min(1.0, grad_lo),
                block=1 / math.sqrt(k / 2), root_k2=math.sqrt(k / 2),
                sum_cap=round(math.sqrt(2 * k / (k + 2)), 3),
            )
        )  # fmt: skip
    return out


def cells(ctx: StudyContext) -> list[dict]:
    """The study's trained nets, one cell per (model, optimizer); a study of one net has one
    empty cell (its claims are not restricted)."""
    cfg = ctx.config
    out = [dict(model=m, optimizer=o) for m in cfg["models"] for o in cfg["optimizers"]]
    return out if len(out) > 1 else [{}]


def readout_case(ctx: StudyContext, readout: str) -> str:
    """Which of the figure's numbers a readout's rule may use: ``argmax`` (the figure's
    10-class curve), ``sum`` (the direction; the project's cap noted), ``other``."""
    return readout if readout in ("argmax", "sum") else "other"


def radius_scope(ctx: StudyContext, k: int, robust: float, strong_hi: float) -> str | None:
    """The radius claims' scope: their weak region (non-robust: below the robust
    construction's 0.4 sqrt(k) x sqrt(d/k)) contains the strong one only where 0.4 sqrt(k)
    exceeds the strong upper bound (k >= 7 for fa.binary_radius, k >= 8 for
    fa.universal_radius; the source's figure is at k = 10). At a smaller k the study cannot
    tell an averaging net's radius from the robust construction's: not applicable (the rule
    shown keeps the strong region; no verdict is drawn)."""
    if robust > strong_hi:
        return None
    return (
        f"at k = {k} the robust construction's radius 0.4 sqrt(k) = {robust} x sqrt(d/k) is "
        f"not above the strong region's end {strong_hi:g}: the study cannot separate a "
        "non-robust radius of order sqrt(d/k) from a robust one (the source's k is 10)"
    )


def reference_scope(ctx: StudyContext, k: int, weak: float) -> str | None:
    """The averaging net's order 1/sqrt(k) x sqrt(d) is below the construction's 0.4 only for
    k >= 7: at a smaller k the two orders cannot be told apart."""
    if weak < 0.4:
        return None
    return (
        f"at k = {k} the averaging net's order sqrt(d/k) = {weak} x sqrt(d) is not below the "
        "construction's 0.4 x sqrt(d): the study cannot separate the robust radius from the "
        "non-robust one (the source's k is 10)"
    )


def gradient_scope(ctx: StudyContext, k: int, c: float) -> str | None:
    """The derivation's ratio sqrt(k/8) less 10 % exceeds the direction's 1 only for k >= 10."""
    if c * (1 - TOL) > 1.0:
        return None
    return (
        f"at k = {k} the theory's ratio sqrt(k/8) = {c} (less 10 %: {c * (1 - TOL):.3f}) is not "
        "above 1: the averaged and the robust net's first-order distances are not separated "
        "there (the claim's direction needs k >= 10; the source's k is 10)"
    )


def scaling_applies(ctx: StudyContext, key: str) -> str | None:
    """``applies`` of a scaling claim: the study sweeps ``key``."""
    sc = ctx.config.get("scaling")
    if sc is None:
        return "the study has no scaling sweep"
    if key not in sc.get("sweeps", {}):
        return f"the scaling sweeps are over {sorted(sc.get('sweeps', {}))}, not {key}"
    return None


CONTEXT = {
    "datasets": datasets,
    "cells": cells,
    "readouts": readouts_of,
    "readout_case": readout_case,
    "radius_scope": radius_scope,
    "reference_scope": reference_scope,
    "gradient_scope": gradient_scope,
    "scaling_applies": scaling_applies,
}
