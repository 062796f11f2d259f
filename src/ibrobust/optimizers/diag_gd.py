"""The optimizer kind ``diag_gd``: gradient descent on the diagonal linear network w = u*u -
v*v (Study PRICE-LIN; robust-ERM algorithm ``diag_gd`` of
:func:`ibrobust.training.robust_erm.train_robust_erm`)."""

from __future__ import annotations

from typing import Any

KEYS = ("alpha", "adaptive", "lr", "c", "c_scale", "lr_max", "zero_subgradient")


def algorithm(entry: dict) -> str:
    return "diag_gd"


def erm_fields(entry: dict) -> dict[str, Any]:
    """RobustERMConfig fields of a ``diag_gd`` entry."""
    return {k: entry[k] for k in KEYS if k in entry}
