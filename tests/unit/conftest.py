"""Shared toy models for the attack tests: tiny MLPs on separable 8x8 'images' in [0, 1].

Ten classes, each a fixed random +-1 pattern: x = clamp(0.5 + 0.15 * pattern_c + 0.1 * noise,
0, 1) (1, 8, 8); the binary label is +1 for classes 0-4. Class templates are ~1.7 apart in
l2 and 0.3 in l_inf, so a good classifier is robust to l2 ~ 0.85 / l_inf ~ 0.15 at most.
Trained full batch with Adam in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ibrobust.models.registry import BuildContext, build_model
from ibrobust.seeding import torch_generator

SHAPE = (1, 8, 8)
K = 10
SIGN = torch.where(torch.arange(K) < K // 2, 1.0, -1.0)  # J+ = classes 0-4


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


def train_toy(supervision: str, seed: int = 0, steps: int = 150) -> nn.Module:
    """An MLP (64 -> 32 -> H): H = 2 with readout (+1, -1) for 'binary', H = 10 for 'fine'."""
    readout = torch.tensor([1.0, -1.0]) if supervision == "binary" else SIGN
    net = build_model({"kind": "mlp", "hidden": [32]}, BuildContext(SHAPE, readout, seed))
    tr = toy_images(300, "train")
    target = (tr.y < 0).long() if supervision == "binary" else tr.fine  # head 0 is '+'
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(net(tr.x), target).backward()
        opt.step()
    return net.eval()


@pytest.fixture(scope="session")
def toy_binary_net() -> nn.Module:
    return train_toy("binary")


@pytest.fixture(scope="session")
def toy_fine_net() -> nn.Module:
    return train_toy("fine")


@pytest.fixture(scope="session")
def toy_test() -> ToyImages:
    return toy_images(40, "test")
