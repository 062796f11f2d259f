"""The model kind ``cnn``: a small convolutional net with one logit per head (Study
FA-IMAGES; the Madry CNN of Study PRICE-NN at CPU width).

    x (n, C, H, W) -> [k x k 'same' conv + 2 x 2 max-pool + ReLU] per width of ``channels``
                   -> flatten -> [Linear + ReLU] per width of ``hidden`` -> head (H logits)

A :class:`~ibrobust.models.image.HeadNet`; ``channels_last`` keeps weights and activations
NHWC (the same function, oneDNN's fast path for narrow convolutions); ``width_multiplier``
scales every width (1: as given). Each stage pools before its ReLU: max and ReLU commute
(relu(max z) = max relu(z), and the gradient reaches the same entry), so this is the usual
conv-ReLU-pool net, bit for bit, with the ReLU on a quarter of the entries
(benchmarks/bench_cnn_layout.py).
"""

from __future__ import annotations

from torch import nn

from ibrobust.models.image import HeadNet, ImageModelConfig, build_head_net, dense, image_shape


def body(shape: tuple[int, ...], cfg: ImageModelConfig) -> tuple[nn.Module, int]:
    """The conv stages and the dense layers on images of ``shape``: (body, last width)."""
    c, h, w = image_shape(shape, "cnn")
    layers: list[nn.Module] = []
    for out in scaled(cfg.channels, cfg.width_multiplier):
        layers += [
            nn.Conv2d(c, out, cfg.kernel, padding=cfg.kernel // 2),
            nn.MaxPool2d(2),  # before the ReLU: the same function (module docstring)
            nn.ReLU(),
        ]
        c, h, w = out, h // 2, w // 2
    if h < 1 or w < 1:
        raise ValueError(f"{len(cfg.channels)} pooling stages are too many for input {shape}")
    head, width = dense(c * h * w, scaled(cfg.hidden, cfg.width_multiplier))
    return nn.Sequential(*layers, head), width


def scaled(widths: tuple[int, ...], multiplier: float) -> tuple[int, ...]:
    """``widths`` times ``multiplier``, rounded, at least 1 (a width ladder's rung)."""
    return tuple(max(1, round(w * multiplier)) for w in widths)


def build(spec: dict, ctx) -> HeadNet:
    """The ``cnn`` kind of :mod:`ibrobust.models.registry` (init stream ``(seed, "model",
    "cnn", "init")``)."""
    return build_head_net(spec, ctx, body)
