"""The model state an attack runs in: eval mode, parameters frozen, both restored after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn


@contextmanager
def attack_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Put every submodule in eval mode and stop parameter gradients for the duration.

    Attacks differentiate with respect to the input only: frozen parameters keep
    gradient-based attacks (FAB calls ``backward``) from accumulating ``.grad`` into the
    model. Each submodule's training flag and each parameter's ``requires_grad`` are
    restored individually on exit, also when the attack raises.
    """
    modes = [(m, m.training) for m in model.modules()]
    grads = [(p, p.requires_grad) for p in model.parameters()]
    model.eval()
    for p, _ in grads:
        p.requires_grad_(False)
    try:
        yield model
    finally:
        for m, training in modes:
            m.training = training
        for p, req in grads:
            p.requires_grad_(req)
