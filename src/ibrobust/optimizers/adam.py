"""The optimizer kind ``adam``: Adam (Kingma & Ba 2015) on a network, minibatches in a seeded
order (``torch.optim.Adam``)."""

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
    "betas": "betas",
    "weight_decay": "weight_decay",
}


def check(entry: dict, where: str) -> None:
    """Its robust-ERM block ``adversarial`` (:func:`ibrobust.optimizers.adversarial.check`)."""
    adversarial.check(entry, where)


def train_fields(entry: dict) -> dict[str, Any]:
    """NetTrainConfig fields of an ``adam`` entry (``betas`` as a tuple)."""
    fields = renamed(entry, KEYS)
    if "betas" in fields:
        fields["betas"] = tuple(float(b) for b in fields["betas"])
    return fields


def torch_optimizer(params, cfg):
    import torch

    return torch.optim.Adam(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
