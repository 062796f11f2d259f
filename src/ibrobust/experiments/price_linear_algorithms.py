"""Study PRICE-LIN's algorithm names, without torch: which robust-ERM algorithm an
``optimizers`` registry entry runs, and its figure label. The training glue
(:mod:`ibrobust.experiments.price_linear`) and the claims ledger (which runs in the Snakemake
process and in a torch-free job) both import them from here."""

from __future__ import annotations

from collections.abc import Mapping

# steepest descent w.r.t. a norm -> the robust_erm algorithm name
STEEPEST_ALGORITHM = {"l2": "gd", "l1": "cd", "linf": "sd"}
ALGORITHM_LABEL = {"gd": "GD", "cd": "CD", "sd": "SD", "diag_gd": "diag-net GD"}
OPTIMIZER_KINDS = ("steepest", "diag_gd")


def algorithm_of(optimizer: Mapping) -> str:
    """robust_erm algorithm (gd / cd / sd / diag_gd) of an ``optimizers`` registry entry."""
    kind = optimizer.get("kind")
    if kind == "steepest":
        norm = optimizer.get("norm", "l2")
        if norm not in STEEPEST_ALGORITHM:
            raise ValueError(f"norm must be one of {tuple(STEEPEST_ALGORITHM)}, got {norm!r}")
        return STEEPEST_ALGORITHM[norm]
    if kind == "diag_gd":
        return "diag_gd"
    raise ValueError(f"optimizer kind must be one of {OPTIMIZER_KINDS} here, got {kind!r}")


def algorithm_label(optimizer: Mapping) -> str:
    """Figure label: GD, CD, SD or diag-net GD."""
    return ALGORITHM_LABEL[algorithm_of(optimizer)]
