"""The model kind ``mlp``: a multilayer perceptron with one logit per head (Study FA-IMAGES).

    x (n, *s) -> flatten -> [Linear + ReLU] per width of ``hidden`` -> head (H logits)

A :class:`~ibrobust.models.image.HeadNet`: the input normalisation inside the model, the
head's rows and the last hidden layer's output as the cosine analysis's neurons and
embedding. It takes any input shape (flat vectors or images), flattened.
"""

from __future__ import annotations

import math

from torch import nn

from ibrobust.models.image import HeadNet, ImageModelConfig, build_head_net, dense


def body(shape: tuple[int, ...], cfg: ImageModelConfig) -> tuple[nn.Module, int]:
    """The hidden layers on a flattened input of ``shape``: (body, last width)."""
    return dense(math.prod(shape), cfg.hidden)


def build(spec: dict, ctx) -> HeadNet:
    """The ``mlp`` kind of :mod:`ibrobust.models.registry` (init stream ``(seed, "model",
    "mlp", "init")``)."""
    return build_head_net(spec, ctx, body)
