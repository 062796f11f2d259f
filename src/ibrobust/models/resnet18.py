"""The model kind ``resnet18``: ResNet-18 for small images with one logit per head (Study
FA-IMAGES; He et al. 2016, the CIFAR variant: 3 x 3 stem, no max-pool).

A :class:`~ibrobust.models.image.HeadNet` on the globally pooled last stage; ``width`` is
the channels of the first stage (64 = the standard net), doubled at each of the 4 stages.
"""

from __future__ import annotations

import torch
from torch import nn

from ibrobust.models.image import HeadNet, ImageModelConfig, build_head_net, image_shape


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


def body(shape: tuple[int, ...], cfg: ImageModelConfig) -> tuple[nn.Module, int]:
    """The 4 stages of 2 basic blocks on images of ``shape``: (body, last stage's width)."""
    channels = image_shape(shape, "resnet18")[0]
    width = cfg.width
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


def build(spec: dict, ctx) -> HeadNet:
    """The ``resnet18`` kind of :mod:`ibrobust.models.registry` (init stream ``(seed,
    "model", "resnet18", "init")``)."""
    return build_head_net(spec, ctx, body)
