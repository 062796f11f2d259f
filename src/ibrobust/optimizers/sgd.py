"""The optimizer kind ``sgd``: minibatch stochastic gradient descent on a network (heavy-ball
``momentum``, L2 ``weight_decay``), batches in a seeded order (``torch.optim.SGD``)."""

from __future__ import annotations

from typing import Any

from ibrobust.optimizers import NETWORK_KEYS, adversarial, renamed

# entry key -> NetTrainConfig field (matmul: read by the prelu path; eval_points: by the
# curve recorder)
KEYS = {
    **NETWORK_KEYS,
    "lr": "lr",
    "epochs": "max_epochs",
    "batch_size": "batch_size",
    "momentum": "momentum",
    "weight_decay": "weight_decay",
}


def check(entry: dict, where: str) -> None:
    """Its robust-ERM block ``adversarial`` (:func:`ibrobust.optimizers.adversarial.check`)."""
    adversarial.check(entry, where)


def train_fields(entry: dict) -> dict[str, Any]:
    """NetTrainConfig fields of an ``sgd`` entry."""
    return renamed(entry, KEYS)


def torch_optimizer(params, cfg):
    import torch

    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
