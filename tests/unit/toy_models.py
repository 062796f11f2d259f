"""Toy image data and tiny trained models shared by the attack tests (tests/unit/conftest.py
makes fixtures of them) and the attack cross-check (its test and its benchmark).

Ten classes, each a fixed random +-1 pattern: x = clamp(0.5 + 0.15 * pattern_c + 0.1 * noise,
0, 1) (1, 8, 8); the binary label is +1 for classes 0-4. Class templates are ~1.7 apart in
l2 and 0.3 in l_inf, so a good classifier is robust to l2 ~ 0.85 / l_inf ~ 0.15 at most.
Trained full batch with Adam in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ibrobust.models.registry import BuildContext, build_model
from ibrobust.seeding import torch_generator

SHAPE = (1, 8, 8)
K = 10
SIGN = torch.where(torch.arange(K) < K // 2, 1.0, -1.0)  # J+ = classes 0-4
MLP = {"kind": "mlp", "hidden": [32]}  # 64 -> 32 -> H
CNN = {"kind": "cnn", "channels": [8, 16], "kernel": 3, "hidden": [32]}  # 8x8 -> 4x4 -> 2x2


@dataclass
class ToyImages:
    x: torch.Tensor  # (n, 1, 8, 8) in [0, 1]
    y: torch.Tensor  # (n,) +-1
    fine: torch.Tensor  # (n,) int64 in [0, 10)


def toy_images(n: int, split: str) -> ToyImages:
    patterns = 2.0 * (torch.rand(K, *SHAPE, generator=torch_generator(0, "toy", "pat")) < 0.5) - 1
    g = torch_generator(0, "toy", split)
    fine = torch.randint(K, (n,), generator=g)
    x = (0.5 + 0.15 * patterns[fine] + 0.1 * torch.randn(n, *SHAPE, generator=g)).clamp(0, 1)
    return ToyImages(x, SIGN[fine], fine)


def train_toy(
    supervision: str, seed: int = 0, steps: int = 150, spec: dict | None = None, n: int = 300
) -> nn.Module:
    """A net of the models entry ``spec`` (default :data:`MLP`) trained on ``n`` toy images:
    H = 2 heads with readout (+1, -1) for 'binary', H = 10 for 'fine'."""
    readout = torch.tensor([1.0, -1.0]) if supervision == "binary" else SIGN
    net = build_model(spec or MLP, BuildContext(SHAPE, readout, seed))
    tr = toy_images(n, "train")
    target = (tr.y < 0).long() if supervision == "binary" else tr.fine  # head 0 is '+'
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(net(tr.x), target).backward()
        opt.step()
    return net.eval()
