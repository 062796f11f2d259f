"""Two-layer ReLU network with a fixed second layer (Li et al., ICLR 2025, Sec. 3).

Binary supervision (H = 2 heads, readout (+1, -1)):
    f(x) = (1/m) sum_r ReLU(<w_{+,r},x> + b_{+,r}) - (1/m) sum_r ReLU(<w_{-,r},x> + b_{-,r})
k-class supervision (H = k heads): f_i(x) = (1/m) sum_r ReLU(<w_{i,r},x> + b_{i,r}), trained
with cross-entropy on the fine label; its binary readout is
    F(x) = sum_{i in J+} f_i(x) - sum_{i in J-} f_i(x),
i.e. the same ``readout`` vector of +-1 per head. Initialisation: w ~ N(0, I/d),
b ~ N(0, 1/d^2) (the paper's choice; only the first layer is trained).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.models.readout import binary_score
from ibrobust.seeding import torch_generator


@dataclass(frozen=True)
class TwoLayerConfig:
    m: int = 5  # neurons per head (per output sign for binary, per class for multi-class)
    init_scale: float = 1.0  # multiplies the paper's N(0, I/d) weight init
    bias: bool = True

    def __post_init__(self) -> None:
        if self.m < 1:
            raise ValueError(f"m must be >= 1, got {self.m}")
        if self.init_scale < 0:
            raise ValueError(f"init_scale must be >= 0, got {self.init_scale}")


class TwoLayerFixed(nn.Module):
    """Heads f_h(x) = mean_r ReLU(<w_{h,r}, x> + b_{h,r}); forward returns (n, H) logits."""

    neurons_read_input = True  # neurons() act on x itself (not on a learned embedding)

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, readout: torch.Tensor):
        super().__init__()
        if weight.ndim != 3 or bias.shape != weight.shape[:2] or readout.shape != weight.shape[:1]:
            raise ValueError(
                f"expected weight (H, m, d), bias (H, m), readout (H,); got "
                f"{tuple(weight.shape)}, {tuple(bias.shape)}, {tuple(readout.shape)}"
            )
        self.weight = nn.Parameter(weight.clone())  # (H, m, d)
        self.bias = nn.Parameter(bias.clone())  # (H, m)
        self.register_buffer("readout", readout.clone().to(weight.dtype))  # (H,)

    @property
    def heads(self) -> int:
        return self.weight.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (n, d) -> (n, H)
        h, m, d = self.weight.shape
        z = x @ self.weight.reshape(h * m, d).T + self.bias.reshape(-1)  # (n, H*m)
        return torch.relu(z).reshape(-1, h, m).mean(-1)

    def binary_score(self, x: torch.Tensor) -> torch.Tensor:  # (n, d) -> (n,)
        return binary_score(self(x), self.readout)

    def embed(self, x: torch.Tensor) -> torch.Tensor:  # (n, d) -> (n, d): neurons read x itself
        return x

    def neurons(self) -> torch.Tensor:  # (H*m, d) first-layer weights, head-major
        return self.weight.reshape(-1, self.weight.shape[-1])

    def neuron_heads(self) -> torch.Tensor:  # (H*m,) head of each neuron
        h, m, _ = self.weight.shape
        return torch.arange(h).repeat_interleave(m)


def init_two_layer(
    d: int, heads: int, cfg: TwoLayerConfig, seed: int, stream: str = "init"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Paper initialisation: weight (H, m, d) ~ N(0, I/d), bias (H, m) ~ N(0, 1/d^2)."""
    g = torch_generator(seed, "two_layer", stream)
    w = torch.randn(heads, cfg.m, d, generator=g) * (cfg.init_scale / d**0.5)
    b = torch.randn(heads, cfg.m, generator=g) / d if cfg.bias else torch.zeros(heads, cfg.m)
    return w, b


def build(spec: dict, ctx) -> TwoLayerFixed:
    """The ``two_layer`` kind of :mod:`ibrobust.models.registry` (paper initialisation)."""
    if len(ctx.input_shape) != 1:
        raise ValueError(f"two_layer needs flat inputs (d,), got shape {tuple(ctx.input_shape)}")
    cfg = TwoLayerConfig(**{k: v for k, v in spec.items() if k != "kind"})
    w, b = init_two_layer(ctx.input_shape[0], ctx.readout.numel(), cfg, ctx.seed)
    return TwoLayerFixed(w, b, ctx.readout)


def to_state(net: TwoLayerFixed, **extra) -> dict:
    """A plain dict of tensors (for ``torch.save(..., weights_only=True)`` loading)."""
    return {
        "weight": net.weight.detach().clone(),
        "bias": net.bias.detach().clone(),
        "readout": net.readout.detach().clone(),
        **extra,
    }


def from_state(state: dict) -> TwoLayerFixed:
    return TwoLayerFixed(state["weight"], state["bias"], state["readout"])


def checkpoint_fields(init: dict, ckpts: dict, last: int) -> dict:
    """The saved iterates as stacked tensors (what the lambda decomposition reads): the
    init and every checkpoint's weight (S, H, m, d) and bias (S, H, m) at ``ckpt_steps``."""
    steps = sorted(ckpts)
    return {
        "init_weight": init["weight"],
        "init_bias": init["bias"],
        "ckpt_steps": torch.tensor(steps),
        "ckpt_weight": torch.stack([ckpts[s]["weight"].detach().clone() for s in steps]),
        "ckpt_bias": torch.stack([ckpts[s]["bias"].detach().clone() for s in steps]),
    }
