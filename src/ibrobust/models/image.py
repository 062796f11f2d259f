"""Image classifiers of Study FA-IMAGES: an MLP, a small CNN and ResNet-18, as H-head nets.

Every net is a :class:`HeadNet`: a feature extractor ``body`` (images -> penultimate
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

from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.models.readout import binary_score
from ibrobust.seeding import torch_generator

IMAGE_MODEL_KINDS = ("mlp", "cnn", "resnet18")


@dataclass(frozen=True)
class ImageModelConfig:
    kind: str = "cnn"
    hidden: tuple[int, ...] = (256,)  # mlp: hidden widths; cnn: widths of the dense layers
    channels: tuple[int, ...] = (32, 64)  # cnn: conv widths (each conv 5x5 'same' + 2x2 pool)
    kernel: int = 5  # cnn: conv kernel size
    width: int = 64  # resnet18: channels of the first stage (64 is the standard net)
    normalize: str = "none"  # "none", "center" (subtract the mean training image) or "standardize" (per-channel mean/std)
    # cnn: NHWC weights and activations (oneDNN's fast path for narrow convolutions)
    channels_last: bool = False

    def __post_init__(self) -> None:
        if self.kind not in IMAGE_MODEL_KINDS:
            raise ValueError(f"kind must be one of {IMAGE_MODEL_KINDS}, got {self.kind!r}")
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
        if self.channels_last and self.kind != "cnn":
            raise ValueError(f"channels_last is a cnn option, got kind {self.kind!r}")


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
    channels_last = False  # NHWC activations; set by build_image_model (cnn, channels_last)

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


def _mlp(in_features: int, hidden: tuple[int, ...]) -> tuple[nn.Module, int]:
    layers: list[nn.Module] = [nn.Flatten()]
    width = in_features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers), width


def _cnn(shape: tuple[int, int, int], cfg: ImageModelConfig) -> tuple[nn.Module, int]:
    c, h, w = shape
    layers: list[nn.Module] = []
    for out in cfg.channels:
        layers += [
            nn.Conv2d(c, out, cfg.kernel, padding=cfg.kernel // 2),
            nn.ReLU(),
            nn.MaxPool2d(2),
        ]
        c, h, w = out, h // 2, w // 2
    if h < 1 or w < 1:
        raise ValueError(f"{len(cfg.channels)} pooling stages are too many for input {shape}")
    dense, width = _mlp(c * h * w, cfg.hidden)
    return nn.Sequential(*layers, dense), width


class _BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.short = (
            nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
            if stride != 1 or c_in != c_out
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.short(x))


def _resnet18(channels: int, width: int) -> tuple[nn.Module, int]:
    """ResNet-18 for small images (He et al. 2016, the CIFAR variant: 3x3 stem, no max-pool)."""
    layers: list[nn.Module] = [
        nn.Conv2d(channels, width, 3, 1, 1, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(),
    ]
    c = width
    for stage, mult in enumerate((1, 2, 4, 8)):
        out = width * mult
        for block in range(2):
            layers.append(_BasicBlock(c, out, 2 if stage > 0 and block == 0 else 1))
            c = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return nn.Sequential(*layers), c


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


def build(spec: dict, ctx) -> HeadNet:
    """The ``mlp`` / ``cnn`` / ``resnet18`` kinds of :mod:`ibrobust.models.registry`."""
    cfg = image_config_from_dict(spec)
    gen = torch_generator(ctx.seed, "model", cfg.kind, "init")
    return build_image_model(cfg, ctx.input_shape, ctx.readout, gen, ctx.train_x)


def build_image_model(
    cfg: ImageModelConfig,
    input_shape: tuple[int, ...],
    readout: torch.Tensor,
    gen: torch.Generator,
    train_x: torch.Tensor | None = None,
) -> HeadNet:
    """A freshly initialised :class:`HeadNet` for inputs of ``input_shape`` ((C, H, W) images;
    the MLP also takes flat (d,) inputs).

    The initialisation is PyTorch's default (Kaiming-uniform) drawn from ``gen``, so the
    same generator state gives the same weights.
    """
    shape = tuple(int(s) for s in input_shape)
    if cfg.kind == "mlp":  # any input shape: flattened
        body, feats = _mlp(int(torch.tensor(shape).prod()), cfg.hidden)
    elif len(shape) != 3:
        raise ValueError(f"{cfg.kind} needs image inputs (C, H, W), got shape {shape}")
    elif cfg.kind == "cnn":
        body, feats = _cnn(shape, cfg)  # type: ignore[arg-type]
    else:
        body, feats = _resnet18(shape[0], cfg.width)
    mean, std = _normalisation(cfg, shape, train_x)
    net = HeadNet(body, feats, readout, mean, std)
    _reinit(net, gen)
    if cfg.channels_last:  # after the init: the same weights, stored NHWC
        net.channels_last = True
        net.to(memory_format=torch.channels_last)
    return net


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
