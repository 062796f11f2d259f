"""Update rules: steepest-descent steps w.r.t. l2 (GD), l1 (coordinate descent), l_inf (sign
descent) (:mod:`~ibrobust.updates.steepest`) and the loss-based learning rate of Lyu & Li
(:mod:`~ibrobust.updates.loss_based`). The config's optimizer kinds, which map an
``optimizers`` entry onto these, are :mod:`ibrobust.optimizers`."""

from ibrobust.updates.steepest import (
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
