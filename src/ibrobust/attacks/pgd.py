"""Projected gradient descent (Madry et al., ICLR 2018) under l2 or l_inf, batched over radii.

``pgd`` attacks every example at every radius of ``eps`` at once (the batch is
radii x examples), with ``restarts`` random starts, and keeps for each (radius,
example) the perturbation with the *worst* outcome for the model: a successful one
(binary decision flipped) if any restart found it, otherwise the one with the highest
attack loss. Steps use the normalised gradient (l2) or its sign (l_inf) with step
size ``step_size * eps`` and project onto the ball (and onto ``box`` if given).
Inputs are (n, d) flat vectors; the model is put in eval mode and restored.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ibrobust.attacks.losses import AttackLoss, binary_correct


@dataclass(frozen=True)
class PGDConfig:
    norm: str = "l2"  # "l2" or "linf"
    steps: int = 50
    restarts: int = 3
    step_size: float = 0.1  # relative to eps (2.5 / steps is Madry's choice for steps=25)
    random_start: bool = True
    batch_size: int = 4096  # (radius, example) pairs per forward pass

    def __post_init__(self) -> None:
        if self.norm not in ("l2", "linf"):
            raise ValueError(f"norm must be 'l2' or 'linf', got {self.norm!r}")
        if self.steps < 1 or self.restarts < 1:
            raise ValueError(f"steps and restarts must be >= 1, got {self.steps}, {self.restarts}")
        if not self.step_size > 0:
            raise ValueError(f"step_size must be > 0, got {self.step_size}")


def _project(delta: torch.Tensor, eps: torch.Tensor, norm: str) -> torch.Tensor:
    if norm == "linf":
        return torch.maximum(torch.minimum(delta, eps), -eps)
    nrm = delta.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return delta * torch.clamp(eps / nrm, max=1.0)


def _random_start(
    shape: tuple[int, int], eps: torch.Tensor, norm: str, gen: torch.Generator
) -> torch.Tensor:
    if norm == "linf":
        return (2 * torch.rand(shape, generator=gen) - 1) * eps
    # uniform in the l2 ball: direction uniform on the sphere, radius eps * U^(1/d)
    g = torch.randn(shape, generator=gen)
    g = g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)
    r = torch.rand(shape[0], 1, generator=gen) ** (1.0 / shape[1])
    return g * r * eps


def _steepest(grad: torch.Tensor, norm: str) -> torch.Tensor:
    if norm == "linf":
        return grad.sign()
    return grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12)


def pgd(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    eps: torch.Tensor | list[float],
    loss_fn: AttackLoss,
    cfg: PGDConfig,
    gen: torch.Generator,
    box: tuple[float, float] | None = None,
) -> torch.Tensor:
    """Adversarial examples (R, n, d) for radii ``eps`` (R,) against ``model``.

    ``loss_fn(model, x, y, fine)`` returns the per-example loss to maximise.
    """
    eps_t = torch.as_tensor(eps, dtype=x.dtype).reshape(-1)  # (R,)
    if (eps_t < 0).any():
        raise ValueError(f"radii must be >= 0, got {eps_t.tolist()}")
    r_, (n, d) = eps_t.numel(), x.shape
    was_training = model.training
    model.eval()
    try:
        out = torch.empty(r_, n, d, dtype=x.dtype)
        # flatten (radius, example) pairs and attack them in chunks
        idx_r = torch.arange(r_).repeat_interleave(n)
        idx_n = torch.arange(n).repeat(r_)
        for lo in range(0, r_ * n, cfg.batch_size):
            sl = slice(lo, lo + cfg.batch_size)
            ir, ie = idx_r[sl], idx_n[sl]
            out[ir, ie] = _pgd_chunk(
                model, x[ie], y[ie], fine[ie], eps_t[ir, None], loss_fn, cfg, gen, box
            )
    finally:
        model.train(was_training)
    return out


def _pgd_chunk(model, x, y, fine, eps, loss_fn, cfg, gen, box):
    best = x.clone()
    best_loss = torch.full((x.shape[0],), -float("inf"))
    best_fooled = torch.zeros(x.shape[0], dtype=torch.bool)
    alpha = cfg.step_size * eps  # (b, 1)
    for _ in range(cfg.restarts):
        delta = (
            _random_start(x.shape, eps, cfg.norm, gen) if cfg.random_start else torch.zeros_like(x)
        )
        if box is not None:
            delta = (x + delta).clamp(*box) - x
        for _ in range(cfg.steps):
            delta.requires_grad_(True)
            loss = loss_fn(model, x + delta, y, fine)
            (grad,) = torch.autograd.grad(loss.sum(), delta)
            with torch.no_grad():
                delta = _project(delta + alpha * _steepest(grad, cfg.norm), eps, cfg.norm)
                if box is not None:
                    delta = (x + delta).clamp(*box) - x
        with torch.no_grad():
            x_adv = x + delta
            loss = loss_fn(model, x_adv, y, fine)
            fooled = ~binary_correct(model, x_adv, y)
            # better = fooled where not yet fooled, else higher loss within the same status
            better = (fooled & ~best_fooled) | ((fooled == best_fooled) & (loss > best_loss))
            best[better] = x_adv[better]
            best_loss = torch.where(better, loss, best_loss)
            best_fooled |= fooled
    return best.detach()
