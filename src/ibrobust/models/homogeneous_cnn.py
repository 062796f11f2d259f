"""The homogeneous CNN of Study MARGIN (Lyu & Li, ICLR 2020, Sec. 5 / App. on MNIST).

    x (n, 1, 28, 28) -> conv 5x5, 32 channels (+ bias) -> ReLU -> max-pool 2
                     -> conv 3x3, 64 channels (no bias) -> ReLU -> max-pool 2
                     -> fc 1024 (no bias) -> ReLU -> fc 10 (no bias)  -> (n, 10) logits

Each stage is computed as max-pool, then ReLU: the two commute (relu(max z) = max relu(z)
exactly, and the gradient reaches the same entry), so it is the paper's net bit for bit,
with the ReLU on a quarter of the entries. ``channels_last`` keeps the conv weights and
activations NHWC: the same function up to float rounding, about 2.5x per float32 training
or evaluation pass of the CPU-scale net with the pool first (float64: 0.85x, so Study
MARGIN applies it to float32 nets only; benchmarks/bench_cnn_layout.py).

"Same" zero padding (the TensorFlow MNIST tutorial's layout the paper builds on): the
feature maps are 28 -> 14 -> 14 -> 7, so fc1 reads 64 * 7 * 7 = 3136 features.

Homogeneity. Let theta = (W1, b1, W2, W3, W4) and c > 0. The first layer maps x to
c * (W1 * x + b1) -- the bias is scaled *with* the weights, which is what "a parameter of
the net" means here, so layer 1 is 1-homogeneous in (W1, b1). ReLU and max-pool are
positively 1-homogeneous (relu(c z) = c relu(z), max(c z) = c max(z)), and each later
bias-free layer multiplies by one more factor c. Hence f(c theta; x) = c^L f(theta; x)
with L = 4, the number of layers that carry weights (:attr:`HomogeneousCNN.homogeneity_degree`).
A bias in any later layer would break this (it would be scaled once, not c^l times).

The model follows the registry contract (``forward`` -> (n, H) logits, a ``readout``
buffer for the binary score, ``embed`` / ``neurons`` / ``neuron_heads`` as :class:`
ibrobust.models.image.HeadNet`), so it is the model kind ``homogeneous_cnn`` of :data:`ibrobust.kinds.MODELS`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.models.readout import binary_score
from ibrobust.seeding import torch_generator


@dataclass(frozen=True)
class HomogeneousCNNConfig:
    channels: tuple[int, int] = (32, 64)  # conv1, conv2 output channels (the paper's)
    kernels: tuple[int, int] = (5, 3)  # conv1, conv2 kernel sizes
    hidden: int = 1024  # fc1 width
    first_bias: bool = True  # the bias of conv1 (the only bias the net may have)
    channels_last: bool = False  # NHWC weights and activations (see the module docstring)

    def __post_init__(self) -> None:
        for key in ("channels", "kernels"):
            v = getattr(self, key)
            if len(v) != 2 or any(int(c) != c or c < 1 for c in v):
                raise ValueError(f"{key} must be two positive integers, got {v!r}")
        if any(k % 2 == 0 for k in self.kernels):
            raise ValueError(f"kernels must be odd ('same' padding), got {self.kernels!r}")
        if self.hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {self.hidden!r}")


class HomogeneousCNN(nn.Module):
    """(n, C, H, W) in [0, 1] -> (n, k) logits; 4-homogeneous in its parameters."""

    homogeneity_degree = 4  # layers with weights (see the module docstring)
    neurons_read_input = False

    def __init__(
        self,
        input_shape: tuple[int, int, int],
        classes: int,
        cfg: HomogeneousCNNConfig = HomogeneousCNNConfig(),
        readout: torch.Tensor | None = None,
    ):
        super().__init__()
        c, h, w = (int(s) for s in input_shape)
        if h % 4 or w % 4:
            raise ValueError(f"input height and width must be multiples of 4, got {input_shape}")
        (c1, c2), (k1, k2) = cfg.channels, cfg.kernels
        self.input_shape = (c, h, w)
        self.conv1 = nn.Conv2d(c, c1, k1, padding=k1 // 2, bias=cfg.first_bias)
        self.conv2 = nn.Conv2d(c1, c2, k2, padding=k2 // 2, bias=False)
        self.fc1 = nn.Linear(c2 * (h // 4) * (w // 4), cfg.hidden, bias=False)
        self.fc2 = nn.Linear(cfg.hidden, classes, bias=False)
        self.pool = nn.MaxPool2d(2)
        self.channels_last = cfg.channels_last
        if readout is None:
            readout = torch.ones(classes)
        if readout.shape != (classes,):
            raise ValueError(f"readout must have shape ({classes},), got {tuple(readout.shape)}")
        self.register_buffer("readout", readout.clone().to(torch.float32))  # (k,)

    def embed(self, x: torch.Tensor) -> torch.Tensor:  # (n, C, H, W) -> (n, hidden)
        if self.channels_last:  # the same values; only the memory layout changes
            x = x.contiguous(memory_format=torch.channels_last)
        z = torch.relu(self.pool(self.conv1(x)))  # (n, c1, H/2, W/2); pool first: docstring
        z = torch.relu(self.pool(self.conv2(z)))  # (n, c2, H/4, W/4)
        return torch.relu(self.fc1(z.flatten(1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (n, C, H, W) -> (n, k)
        return self.fc2(self.embed(x))

    def binary_score(self, x: torch.Tensor) -> torch.Tensor:  # (n,)
        return binary_score(self(x), self.readout.to(x.dtype))

    def neurons(self) -> torch.Tensor:  # (k, hidden): the last layer's rows read the embedding
        return self.fc2.weight

    def neuron_heads(self) -> torch.Tensor:  # (k,)
        return torch.arange(self.fc2.out_features)

    def weight_layers(self) -> list[nn.Module]:
        """The layers with weights, input to output (what :mod:`ibrobust.analysis.lipschitz` reads)."""
        return [self.conv1, self.conv2, self.fc1, self.fc2]


def build_homogeneous_cnn(
    input_shape: tuple[int, int, int],
    classes: int,
    cfg: HomogeneousCNNConfig,
    seed: int,
    *,
    dtype: torch.dtype = torch.float64,
    readout: torch.Tensor | None = None,
) -> HomogeneousCNN:
    """A net with PyTorch's default init (U(-1/sqrt(fan_in), +1/sqrt(fan_in)) for weights and
    the conv1 bias), drawn from ``torch_generator(seed, "model", "homogeneous_cnn", "init")``."""
    net = HomogeneousCNN(input_shape, classes, cfg, readout)
    gen = torch_generator(seed, "model", "homogeneous_cnn", "init")
    with torch.no_grad():
        for layer in net.weight_layers():
            bound = 1.0 / layer.weight[0].numel() ** 0.5
            layer.weight.copy_((torch.rand(layer.weight.shape, generator=gen) * 2 - 1) * bound)
            if layer.bias is not None:
                layer.bias.copy_((torch.rand(layer.bias.shape, generator=gen) * 2 - 1) * bound)
    if cfg.channels_last:  # after the init: the same weights, stored NHWC
        net.to(memory_format=torch.channels_last)
    return net.to(dtype)


def build(spec: dict, ctx) -> HomogeneousCNN:
    """The ``homogeneous_cnn`` kind of :mod:`ibrobust.models.registry` (float64; ``hidden``
    is the one-element list of the models schema, or an int)."""
    hidden = spec.get("hidden", HomogeneousCNNConfig.hidden)
    if isinstance(hidden, list | tuple):
        if len(hidden) != 1:
            raise ValueError(f"homogeneous_cnn has one hidden layer, got hidden={hidden!r}")
        hidden = hidden[0]
    cfg = HomogeneousCNNConfig(
        channels=tuple(int(v) for v in spec.get("channels", HomogeneousCNNConfig.channels)),
        kernels=tuple(int(v) for v in spec.get("kernels", HomogeneousCNNConfig.kernels)),
        hidden=int(hidden),
        first_bias=bool(spec.get("first_bias", HomogeneousCNNConfig.first_bias)),
        channels_last=bool(spec.get("channels_last", HomogeneousCNNConfig.channels_last)),
    )
    if len(ctx.input_shape) != 3:
        raise ValueError(f"homogeneous_cnn needs image inputs (C, H, W), got {ctx.input_shape}")
    dtype = {"float64": torch.float64, "float32": torch.float32}[spec.get("dtype", "float64")]
    return build_homogeneous_cnn(
        tuple(ctx.input_shape), ctx.readout.numel(), cfg, ctx.seed, dtype=dtype, readout=ctx.readout
    )
