"""The head nets of Study FA-IMAGES' image classifiers (a library module, not a kind).

The model kinds ``mlp``, ``cnn`` and ``resnet18`` (:mod:`ibrobust.models.mlp`,
:mod:`~ibrobust.models.cnn`, :mod:`~ibrobust.models.resnet18`) each give a feature
extractor ``body``; this module turns it into a net. Every net is a :class:`HeadNet`: a feature extractor ``body`` (images -> penultimate
embedding (n, F)) followed by a linear ``head`` (F -> H logits), plus the project's model
contract: a ``readout`` buffer (H,) with ``binary_score(x) = forward(x) @ readout``. With
2-class supervision H = 2 and readout = (+1, -1) (so cross-entropy on the two logits is the
logistic loss of the binary score); with 10-class supervision H = 10 and readout = the +-1
sign of each class (the binary readout "sum of J+ logits - sum of J- logits" of Li et al.).

Inputs are images in [0, 1] (n, C, H, W): the fixed input normalisation (``mean``/``std``
buffers) lives inside the model, so attacks work in pixel space with the [0, 1] box.

:func:`neurons` and :func:`embed` expose what the cosine analysis reads: the rows of the
head (one per logit) and the penultimate embedding they act on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import torch
from torch import nn

from ibrobust import kinds
from ibrobust.models.readout import binary_score
from ibrobust.seeding import torch_generator

# a kind's feature extractor: (input shape, config) -> (body, embedding width F)
Body = Callable[[tuple[int, ...], "ImageModelConfig"], tuple[nn.Module, int]]


@dataclass(frozen=True)
class ImageModelConfig:
    """The settings of the head-net kinds (their union; a kind's fragment says which are its)."""

    kind: str = "cnn"  # a model kind whose module gives ``body`` (mlp, cnn or resnet18)
    hidden: tuple[int, ...] = (256,)  # mlp: hidden widths; cnn: widths of the dense layers
    channels: tuple[int, ...] = (32, 64)  # cnn: conv widths (each conv 5x5 'same' + 2x2 pool)
    kernel: int = 5  # cnn: conv kernel size
    width: int = 64  # resnet18: channels of the first stage (64 is the standard net)
    normalize: str = "none"  # "none", "center" (subtract the mean training image) or "standardize" (per-channel mean/std)
    # cnn: NHWC weights and activations (oneDNN's fast path for narrow convolutions)
    channels_last: bool = False
    width_multiplier: float = 1.0  # cnn: every conv and dense width times this (rounded)

    def __post_init__(self) -> None:
        # a setting away from its default must be one of the kind's (its schema fragment)
        settings = kinds.MODELS.fragment(self.kind).get("properties", {})
        for f in fields(self):
            if f.name not in settings and getattr(self, f.name) != f.default:
                raise ValueError(
                    f"{f.name} is not a setting of model kind {self.kind!r} "
                    f"(its settings: {sorted(set(settings) - {'kind'})})"
                )
        if self.normalize not in ("none", "center", "standardize"):
            raise ValueError(
                f"normalize must be 'none', 'center' or 'standardize', got {self.normalize!r}"
            )
        for key in ("hidden", "channels"):
            vals = getattr(self, key)
            if any(int(v) < 1 for v in vals):
                raise ValueError(f"{key} must be positive widths, got {list(vals)}")
        if self.kernel < 1 or self.kernel % 2 == 0:
            raise ValueError(f"kernel must be a positive odd integer, got {self.kernel}")
        if self.width < 1:
            raise ValueError(f"width must be >= 1, got {self.width}")


def image_config_from_dict(d: dict) -> ImageModelConfig:
    """Typed config from a registry entry (lists become tuples; unknown keys are an error)."""
    fields = dict(d)
    for key in ("hidden", "channels"):
        if key in fields:
            fields[key] = tuple(int(v) for v in fields[key])
    try:
        return ImageModelConfig(**fields)
    except TypeError as err:
        raise ValueError(f"bad image model settings {sorted(d)}: {err}") from None


class HeadNet(nn.Module):
    """``head(body((x - mean) / std))``: (n, C, H, W) in [0, 1] -> (n, H) logits."""

    neurons_read_input = False  # neurons() act on x itself (not on a learned embedding)
    channels_last = False  # NHWC activations; set by head_net (cnn, channels_last)

    def __init__(
        self,
        body: nn.Module,
        features: int,
        readout: torch.Tensor,
        mean: torch.Tensor,
        std: torch.Tensor,
    ):
        super().__init__()
        self.body = body
        self.head = nn.Linear(features, readout.numel())
        self.register_buffer("readout", readout.clone().to(torch.float32))  # (H,)
        self.register_buffer("mean", mean.clone().to(torch.float32))  # broadcasts with one input
        self.register_buffer("std", std.clone().to(torch.float32))

    def embed(self, x: torch.Tensor) -> torch.Tensor:  # (n, *input_shape) -> (n, F)
        z = (x - self.mean) / self.std
        if self.channels_last:  # the same values; only the memory layout changes
            z = z.contiguous(memory_format=torch.channels_last)
        return self.body(z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (n, C, H, W) -> (n, H)
        return self.head(self.embed(x))

    def binary_score(self, x: torch.Tensor) -> torch.Tensor:  # (n, C, H, W) -> (n,)
        return binary_score(self(x), self.readout)

    def neurons(self) -> torch.Tensor:  # (H, F): the head's rows read the embedding
        return self.head.weight

    def neuron_heads(self) -> torch.Tensor:  # (H,): row h is head h
        return torch.arange(self.readout.numel())


def dense(in_features: int, hidden: tuple[int, ...]) -> tuple[nn.Module, int]:
    """Flatten, then Linear + ReLU per hidden width: (body, its output width)."""
    layers: list[nn.Module] = [nn.Flatten()]
    width = in_features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers), width


def image_shape(shape: tuple[int, ...], kind: str) -> tuple[int, int, int]:
    """``shape`` when it is an image's (C, H, W); ValueError naming ``kind`` otherwise."""
    if len(shape) != 3:
        raise ValueError(f"{kind} needs image inputs (C, H, W), got shape {shape}")
    return shape  # type: ignore[return-value]


def _normalisation(
    cfg: ImageModelConfig, shape: tuple[int, ...], train_x: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, std) buffers broadcasting against one input of ``shape``."""
    per_channel = (shape[0], 1, 1) if len(shape) == 3 else shape  # flat inputs: per feature
    if cfg.normalize == "none":
        return torch.zeros(per_channel), torch.ones(per_channel)
    if train_x is None:
        raise ValueError(f"normalize={cfg.normalize!r} needs the training inputs")
    if cfg.normalize == "center":  # the mean training image (Min & Vidal's MNIST setup)
        return train_x.float().mean(0), torch.ones(per_channel)
    c = per_channel[0] if len(shape) == 3 else int(torch.tensor(shape).prod())
    flat = train_x.float().reshape(len(train_x), c, -1).transpose(0, 1).reshape(c, -1)  # (C, .)
    return flat.mean(1).reshape(per_channel), flat.std(1).clamp_min(1e-6).reshape(per_channel)


def build_head_net(spec: dict, ctx, body: Body) -> HeadNet:
    """A kind's ``build``: the models entry ``spec`` as a :class:`HeadNet` on ``body``, its
    init drawn from the stream ``(seed, "model", <kind>, "init")``."""
    cfg = image_config_from_dict(spec)
    gen = torch_generator(ctx.seed, "model", cfg.kind, "init")
    return head_net(cfg, body, ctx.input_shape, ctx.readout, gen, ctx.train_x)


def head_net(
    cfg: ImageModelConfig,
    body: Body,
    input_shape: tuple[int, ...],
    readout: torch.Tensor,
    gen: torch.Generator,
    train_x: torch.Tensor | None = None,
) -> HeadNet:
    """A freshly initialised :class:`HeadNet` on the feature extractor ``body(shape, cfg)``.

    The initialisation is PyTorch's default (Kaiming-uniform) drawn from ``gen``, so the
    same generator state gives the same weights.
    """
    shape = tuple(int(s) for s in input_shape)
    net_body, feats = body(shape, cfg)
    mean, std = _normalisation(cfg, shape, train_x)
    net = HeadNet(net_body, feats, readout, mean, std)
    _reinit(net, gen)
    if cfg.channels_last:  # after the init: the same weights, stored NHWC
        net.channels_last = True
        net.to(memory_format=torch.channels_last)
    return net


def build_image_model(
    cfg: ImageModelConfig,
    input_shape: tuple[int, ...],
    readout: torch.Tensor,
    gen: torch.Generator,
    train_x: torch.Tensor | None = None,
) -> HeadNet:
    """:func:`head_net` on the ``body`` of ``cfg.kind``'s module (for callers that build a
    net from a typed config, e.g. the benchmarks)."""
    return head_net(cfg, kinds.MODELS.load(cfg.kind).body, input_shape, readout, gen, train_x)


def _reinit(net: nn.Module, gen: torch.Generator) -> None:
    """Re-draw every parameter from ``gen`` with PyTorch's default init distributions."""
    with torch.no_grad():
        for mod in net.modules():
            if isinstance(mod, nn.Linear | nn.Conv2d):
                fan_in = mod.weight[0].numel()
                bound = 1.0 / fan_in**0.5  # kaiming_uniform(a=sqrt(5)) == U(-1/sqrt(fan_in), .)
                mod.weight.copy_((torch.rand(mod.weight.shape, generator=gen) * 2 - 1) * bound)
                if mod.bias is not None:
                    mod.bias.copy_((torch.rand(mod.bias.shape, generator=gen) * 2 - 1) * bound)
            elif isinstance(mod, nn.BatchNorm2d):
                mod.reset_parameters()
