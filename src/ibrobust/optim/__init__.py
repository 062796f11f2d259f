"""Optimizers: steepest descent w.r.t. l2 (GD), l1 (coordinate descent), l_inf (sign descent)."""

from ibrobust.optim.steepest import (
    NORMS,
    SCALES,
    TIES,
    SteepestDescent,
    adaptive_log_lr,
    dual_norm,
    steepest_direction,
)

__all__ = [
    "NORMS",
    "SCALES",
    "TIES",
    "SteepestDescent",
    "adaptive_log_lr",
    "dual_norm",
    "steepest_direction",
]
