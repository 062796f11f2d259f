"""Where each registry kind lives: one table that both dispatches and hashes.

The generic pieces (``data.registry``, ``models.registry``, ``experiments.networks``,
``attacks.suite``) never import a kind's module statically; they load it from these
tables with :func:`load`. The workflow adds the code hash of exactly the modules of a
job's own kinds to that job's ``code`` param (``ibrobust.provenance.code_hash``), so
editing the image loaders reruns the image dataset jobs and not the synthetic ones, and
editing the CNN reruns the CNN's jobs and not the two-layer nets of Study FA.

This module imports nothing heavy: the Snakefile reads it while parsing.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the Snakefile reads this module: no torch at run time
    import numpy as np
    import torch


class DatasetKind(Protocol):
    """A module of :data:`DATASETS`."""

    def make_dataset(
        self, spec: dict, seed: int, data_root: Any
    ) -> tuple[dict[str, np.ndarray], dict]: ...


class ModelKind(Protocol):
    """A module of :data:`MODELS`: a freshly initialised net for a registry entry."""

    def build(self, spec: dict, ctx: Any) -> torch.nn.Module: ...


class AttackKind(Protocol):
    """A module of :data:`ATTACKS`. Its policy (norm, the labels it aims at, what it needs
    from the data) and its schema sit in ``attacks/schema/<kind>.yaml``
    (:mod:`ibrobust.attacks.policy`)."""

    def parse_spec(self, spec: dict) -> Any:
        """A config entry without ``kind`` -> validated settings (ValueError naming a key)."""

    def describe(self, settings: Any) -> dict:
        """What runs, flat (recorded beside every robust accuracy)."""

    def run_spec(
        self, model: Any, x: Any, y: Any, fine: Any, eps: float, settings: Any, ctx: Any, gen: Any
    ) -> torch.Tensor:
        """(n,) bool: still correct under ``ctx.task`` after the attack at radius ``eps``."""


# datasets kind -> module exposing make_dataset(spec, seed, data_root) -> (arrays, meta)
DATASETS = {
    "clusters": "ibrobust.data.clusters",
    "image": "ibrobust.data.images",
}
# models kind -> module exposing build(cfg, ctx) (robust_reference: built from the data)
MODELS = {
    "two_layer": "ibrobust.models.two_layer",
    "robust_reference": "ibrobust.models.robust_reference",
    "mlp": "ibrobust.models.image",
    "cnn": "ibrobust.models.image",
    "fc": "ibrobust.models.fc",
    "resnet18": "ibrobust.models.image",
    "prelu": "ibrobust.models.prelu",
    "homogeneous_cnn": "ibrobust.models.homogeneous_cnn",
}
# training path -> module exposing fit_path, a training.protocol.Trainer (network: an
# adapter in experiments.networks until training/network.py exposes its own)
TRAINERS = {
    "construct": "ibrobust.models.robust_reference",  # the hand-built net is not trained
    "gram_gd": "ibrobust.training.full_batch",  # exact fast GD of two-layer nets
    "network": "ibrobust.training.network",  # any net: steepest descent, SGD, Adam
    "prelu": "ibrobust.training.prelu",  # pReLU nets under plain SGD / Adam: manual backward
}
# attacks kind -> module (AttackKind); its schema + policy: attacks/schema/<kind>.yaml
ATTACKS = {
    "pgd": "ibrobust.attacks.pgd",
    "universal": "ibrobust.attacks.universal",
    "autoattack": "ibrobust.attacks.autoattack",
    "noise": "ibrobust.attacks.noise",
}


def trainer(model: dict, optimizer: dict) -> str:
    """The training path of a (models entry, optimizers entry) pair.

    ``prelu``: a pReLU net under plain minibatch SGD or Adam (no momentum, weight decay,
    early stop or checkpoints - what the official loop computes), by the fast loop of
    :mod:`ibrobust.training.prelu`; any other optimizer setting (e.g. sign descent, ``gd``
    with norm linf) trains a pReLU net through the generic ``network`` path.
    """
    if model.get("kind") == "robust_reference":
        return "construct"
    if robust_or_curves(optimizer):  # only the generic loop has robust ERM and curves
        return "network"
    if (
        model.get("kind") == "prelu"
        and optimizer.get("kind") in ("sgd", "adam")
        and not optimizer.get("momentum", 0.0)
        and not optimizer.get("weight_decay", 0.0)
        and optimizer.get("stop_loss") is None
        and not optimizer.get("n_checkpoints", 0)
    ):
        return "prelu"
    gram = (
        model.get("kind") == "two_layer"
        and optimizer.get("kind") == "gd"
        and optimizer.get("norm", "l2") == "l2"
        and optimizer.get("scale", "dual") == "dual"
        and optimizer.get("loss", "auto") in ("auto", "logistic")
    )
    return "gram_gd" if gram else "network"


def robust_or_curves(optimizer: dict) -> bool:
    """True when an optimizer entry asks for robust ERM (``adversarial.eps`` > 0) or for
    curves during training (``eval_every``)."""
    adv = optimizer.get("adversarial") or {}
    return float(adv.get("eps", 0.0)) > 0 or optimizer.get("eval_every") is not None


def module_of(table: dict[str, str], kind: str, what: str) -> str:
    try:
        return table[kind]
    except KeyError:
        raise ValueError(f"unknown {what} kind {kind!r}; known: {sorted(table)}") from None


def load(table: dict[str, str], kind: str, what: str) -> ModuleType:
    """The module of ``kind`` in ``table`` (ValueError naming the kind if unknown)."""
    return importlib.import_module(module_of(table, kind, what))
