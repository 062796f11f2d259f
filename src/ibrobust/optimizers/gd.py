"""The optimizer kind ``gd``: full-batch steepest descent on a network w.r.t. ``norm`` (l2 =
gradient descent, linf = sign descent, l1 = coordinate descent), constant step ``lr``; one
epoch is one step (:class:`ibrobust.updates.steepest.SteepestDescent`)."""

from __future__ import annotations

from typing import Any

from ibrobust.optimizers import NETWORK_KEYS, adversarial, renamed

# entry key -> NetTrainConfig field (method and lr_schedule: read by the gram_gd path /
# constant only; eval_points: by the curve recorder)
KEYS = {
    **NETWORK_KEYS,
    "lr": "lr",
    "max_steps": "max_epochs",
    "norm": "norm",
    "scale": "scale",
}


def check(entry: dict, where: str) -> None:
    """Its robust-ERM block ``adversarial`` (:func:`ibrobust.optimizers.adversarial.check`)."""
    adversarial.check(entry, where)


def train_fields(entry: dict) -> dict[str, Any]:
    """NetTrainConfig fields of a ``gd`` entry."""
    return renamed(entry, KEYS)


def torch_optimizer(params, cfg):
    """Steepest descent in ``cfg.norm`` with step ``cfg.lr`` (``cfg.scale``: dual / unit)."""
    from ibrobust.updates.steepest import SteepestDescent

    return SteepestDescent(params, lr=cfg.lr, norm=cfg.norm, scale=cfg.scale)
