"""Model registry: build a network from its config entry, save it, and load it back.

Every model follows one contract (see models/two_layer.py): ``forward(x)`` gives (n, H)
logits, the buffer ``readout`` (H,) maps them to the binary score ``binary_score(x)``, and
``embed(x)`` / ``neurons()`` / ``neuron_heads()`` expose what the cosine analysis reads.

A saved model is a plain dict of tensors and primitives (``torch.load(weights_only=True)``)
holding the ``kind``, the registry ``config`` and what the builder needs to rebuild the
architecture (``input_shape``, ``readout``) next to the ``state_dict``; the two-layer nets of
Study FA keep their own flat format (``two_layer.to_state``) which also carries the
checkpoints of the lambda decomposition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ibrobust.models.image import IMAGE_MODEL_KINDS, build_image_model, image_config_from_dict
from ibrobust.models.two_layer import (
    TwoLayerConfig,
    TwoLayerFixed,
    from_state,
    init_two_layer,
)
from ibrobust.seeding import torch_generator


@dataclass
class BuildContext:
    """What a builder may need besides the config entry."""

    input_shape: tuple[int, ...]  # one input, e.g. (d,) or (C, H, W)
    readout: torch.Tensor  # (H,) the binary readout; H = number of heads
    seed: int
    train_x: torch.Tensor | None = None  # (n, *input_shape) for data-dependent settings


Builder = Callable[[dict, BuildContext], nn.Module]


def _two_layer(cfg: dict, ctx: BuildContext) -> nn.Module:
    if len(ctx.input_shape) != 1:
        raise ValueError(f"two_layer needs flat inputs (d,), got {ctx.input_shape}")
    tl = TwoLayerConfig(**cfg)
    w, b = init_two_layer(ctx.input_shape[0], ctx.readout.numel(), tl, ctx.seed)
    return TwoLayerFixed(w, b, ctx.readout)


def _image(kind: str) -> Builder:
    def build(cfg: dict, ctx: BuildContext) -> nn.Module:
        icfg = image_config_from_dict({"kind": kind, **cfg})
        gen = torch_generator(ctx.seed, "model", kind, "init")
        return build_image_model(icfg, ctx.input_shape, ctx.readout, gen, ctx.train_x)

    return build


BUILDERS: dict[str, Builder] = {
    "two_layer": _two_layer,
    **{k: _image(k) for k in IMAGE_MODEL_KINDS},
}


def register(kind: str, builder: Builder) -> None:
    """Add a model kind (used by modules that define further architectures)."""
    BUILDERS[kind] = builder


def build_model(spec: dict, ctx: BuildContext) -> nn.Module:
    """A freshly initialised model for the registry entry ``spec`` (``{"kind": ..., ...}``)."""
    kind = spec.get("kind")
    if kind not in BUILDERS:
        raise ValueError(f"unknown model kind {kind!r}; known: {sorted(BUILDERS)}")
    return BUILDERS[kind]({k: v for k, v in spec.items() if k != "kind"}, ctx)


def model_state(net: nn.Module, spec: dict, ctx: BuildContext | None, **extra: Any) -> dict:
    """A plain dict that :func:`load_model` turns back into ``net`` (``ctx`` as built; the
    two-layer nets need none)."""
    if isinstance(net, TwoLayerFixed):
        return {
            "kind": spec.get("kind", "two_layer"),
            "weight": net.weight.detach().clone(),
            "bias": net.bias.detach().clone(),
            "readout": net.readout.detach().clone(),
            **extra,
        }
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
    if "state_dict" not in state:  # two-layer nets and the hand-built reference
        return from_state(state).eval()
    shape = tuple(int(s) for s in state["input_shape"])
    # data-dependent buffers (input normalisation) come back with the state_dict: building
    # only needs training images of the right shape
    ctx = BuildContext(shape, state["readout"], int(state["seed"]), torch.zeros(2, *shape))
    net = build_model(state["config"], ctx)
    net.load_state_dict(state["state_dict"])
    return net.eval()
