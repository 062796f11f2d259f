"""Model registry: build a network from its config entry, save it, and load it back.

Every model follows one contract (see models/two_layer.py): ``forward(x)`` gives (n, H)
logits, the buffer ``readout`` (H,) maps them to the binary score ``binary_score(x)``, and
``embed(x)`` / ``neurons()`` / ``neuron_heads()`` expose what the cosine analysis reads.
Each kind's module (:data:`ibrobust.kinds.MODELS`) exposes ``build(spec, ctx)`` (a
constructed kind: ``construct(spec, data)``, :func:`construct_model`), and optionally
``readout_for(spec, supervision, sign)`` when its heads differ from
:func:`ibrobust.models.readout.readout_for` (:func:`model_readout`) and
``checkpoint_fields(init, checkpoints, last)`` when its iterates are saved another way
(:func:`checkpoint_fields`); it is loaded on demand, so a job's code hash covers only its
own model's module.

A saved model is a plain dict of tensors and primitives (``torch.load(weights_only=True)``)
holding the ``kind``, the registry ``config`` and what the builder needs to rebuild the
architecture (``input_shape``, ``readout``, ``seed``) next to the ``state_dict``. Modules
with a flat format of their own (``to_state`` / ``from_state``: the two-layer nets of
Study FA, whose files also carry the checkpoints of the lambda decomposition) keep it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ibrobust import kinds
from ibrobust.models.readout import readout_for


@dataclass
class BuildContext:
    """What a builder may need besides the config entry."""

    input_shape: tuple[int, ...]  # one input, e.g. (d,) or (C, H, W)
    readout: torch.Tensor  # (H,) the binary readout; H = number of heads
    seed: int
    train_x: torch.Tensor | None = None  # (n, *input_shape) for data-dependent settings


def _module(kind: str | None):
    return kinds.MODELS.load(kind)


def model_readout(spec: dict, supervision: str, sign: torch.Tensor) -> torch.Tensor:
    """(H,) readout of a model trained under ``supervision``: the kind module's own
    ``readout_for(spec, supervision, sign)`` when it has one (pReLU nets: one binary head,
    as in the official code), else :func:`ibrobust.models.readout.readout_for`."""
    module = _module(spec.get("kind"))
    if hasattr(module, "readout_for"):
        return module.readout_for(spec, supervision, sign)
    return readout_for(supervision, sign)


def build_model(spec: dict, ctx: BuildContext) -> nn.Module:
    """A freshly initialised model for the registry entry ``spec`` (``{"kind": ..., ...}``)."""
    return _module(spec.get("kind")).build(spec, ctx)


def construct_model(spec: dict, data) -> nn.Module:
    """The net of a constructed kind (capability ``constructed``), built from ``data``."""
    return _module(spec.get("kind")).construct(spec, data)


def checkpoint_fields(spec: dict, init: dict, ckpts: dict, last: int) -> dict:
    """What a saved model keeps of its iterates (epoch -> state dict, ``init`` = epoch 0):
    the kind module's ``checkpoint_fields(init, ckpts, last)`` when it has one (two-layer
    nets: stacked tensors, which the lambda decomposition reads), else the state dicts of
    the epochs between the first and the last (``checkpoints``)."""
    module = _module(spec.get("kind"))
    if hasattr(module, "checkpoint_fields"):
        return module.checkpoint_fields(init, ckpts, last)
    return {"checkpoints": {str(e): s for e, s in ckpts.items() if e not in (0, last)}}


def model_state(net: nn.Module, spec: dict, ctx: BuildContext | None, **extra: Any) -> dict:
    """A plain dict that :func:`load_model` turns back into ``net`` (``ctx`` as built; kinds
    with a flat format of their own need none)."""
    module = _module(spec.get("kind"))
    if hasattr(module, "to_state"):
        return module.to_state(net, kind=spec["kind"], **extra)
    if ctx is None:
        raise ValueError(f"saving a {spec.get('kind')!r} model needs its BuildContext")
    return {
        "kind": spec["kind"],
        "config": dict(spec),
        "input_shape": list(ctx.input_shape),
        "readout": ctx.readout.detach().clone(),
        "seed": int(ctx.seed),
        "state_dict": {k: v.detach().clone() for k, v in net.state_dict().items()},
        **extra,
    }


def load_model(state: dict) -> nn.Module:
    """Rebuild a saved model (eval mode; buffers and weights restored exactly)."""
    module = _module(state.get("kind"))
    if "state_dict" not in state:
        return module.from_state(state).eval()
    shape = tuple(int(s) for s in state["input_shape"])
    # data-dependent buffers (input normalisation) come back with the state_dict: building
    # only needs training inputs of the right shape
    ctx = BuildContext(shape, state["readout"], int(state["seed"]), torch.zeros(2, *shape))
    net = module.build(state["config"], ctx)
    net.load_state_dict(state["state_dict"])
    return net.eval()
