"""The optimizer kind ``steepest``: steepest descent w.r.t. a norm on a linear model (Study
PRICE-LIN; :func:`ibrobust.training.robust_erm.train_robust_erm`): l2 = gradient descent
(algorithm ``gd``), l1 = coordinate descent (``cd``), linf = sign descent (``sd``)."""

from __future__ import annotations

from typing import Any

# the norm -> the robust-ERM algorithm that descends in it
ALGORITHMS = {"l2": "gd", "l1": "cd", "linf": "sd"}
KEYS = ("scale", "c", "c_scale", "lr_max", "tie", "zero_subgradient")  # RobustERMConfig fields


def algorithm(entry: dict) -> str:
    """gd, cd or sd: the robust-ERM algorithm of the entry's ``norm``."""
    norm = entry.get("norm")
    if norm not in ALGORITHMS:
        raise ValueError(f"norm must be one of {tuple(ALGORITHMS)}, got {norm!r}")
    return ALGORITHMS[norm]


def erm_fields(entry: dict) -> dict[str, Any]:
    """RobustERMConfig fields of a ``steepest`` entry."""
    return {k: entry[k] for k in KEYS if k in entry}
