"""Robust ERM (adversarial training, Madry et al., ICLR 2018) as an option of any network trainer.

Each training step replaces its batch by the batch's PGD perturbation and then takes the
optimizer step on the loss at the perturbed points:

    x_adv = PGD_eps(x)            (``steps`` steps of size ``step_size * eps``, random start)
    theta <- step(grad_theta L(f_theta(x_adv), y))

This module holds only that batch -> batch map; the trainer calls it through one hook
(:func:`batch_perturbation`, used by :func:`ibrobust.training.network.train_network`), so
every network study (the FA two-layer nets, the pReLU nets, Study PRICE-NN) gets robust
ERM from a config entry. ``eps = 0`` (the default) is plain ERM: no hook at all, and the
iterates are bit-identical to a run without the option.

The attack is :func:`ibrobust.attacks.pgd.pgd` with one restart (which returns the last
iterate) inside the input ``box`` (default [0, 1], the images' range). Defaults are the
paper's (Tsilivis et al., NeurIPS 2024, App. F.2): l_inf, 10 steps of 2.5 * eps / 10, a
uniform random start in the ball.

Which loss PGD ascends: the per-example *margin* ``-y f(x)`` under binary supervision and
the cross-entropy of the heads under k-class supervision. For binary supervision every
training loss is a decreasing function ``l(y f)`` of the margin (logistic, exponential),
so ``grad_x l = -l'(y f) * grad_x (y f)`` with ``-l' > 0`` per example; PGD's l_inf step
(the gradient's sign), l2 step (the per-example normalised gradient) and l1 step (the
top-|gradient| coordinates) are all invariant to a positive per-example factor, so ascending
the margin gives *exactly* the iterates of ascending the training loss, with no exp()
that could overflow or underflow.

Random starts are drawn from one generator per training run, ``torch_generator(seed,
"train", "adversarial")``, so the same seed gives the same perturbations.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.optimizers.adversarial import (  # noqa: F401  (adversarial_from_dict re-exported)
    AdversarialConfig,
    adversarial_from_dict,
)
from ibrobust.seeding import torch_generator

# supervision -> the attack loss whose ascent equals that of the training loss (see above)
ATTACK_LOSS = {"binary": "margin", "multiclass": "ce"}
# supervision -> the task that judges a point correct (ibrobust.attacks.tasks)
TASK = {"binary": "binary", "multiclass": "fine"}

Perturbation = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def pgd_config(cfg: AdversarialConfig) -> PGDConfig:
    """The PGD run on each batch: one restart (the last iterate), the whole batch at once."""
    step = 2.5 / cfg.steps if cfg.step_size is None else cfg.step_size
    return PGDConfig(
        norm=cfg.norm,
        steps=cfg.steps,
        restarts=1,
        step_size=step,
        random_start=cfg.random_start,
        batch_size=1 << 30,
    )


def perturb_batch(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    cfg: AdversarialConfig,
    supervision: str,
    gen: torch.Generator,
) -> torch.Tensor:
    """(n, *s) PGD perturbation of the batch ``x`` (n, *s) at radius ``cfg.eps`` (``x`` itself
    for eps = 0); the model's mode and parameters' ``requires_grad`` are restored."""
    if supervision not in ATTACK_LOSS:
        raise ValueError(f"supervision must be one of {sorted(ATTACK_LOSS)}, got {supervision!r}")
    if not cfg.active:
        return x
    x_adv = pgd(
        model,
        x,
        y,
        fine,
        [cfg.eps],
        ATTACK_LOSS[supervision],
        pgd_config(cfg),
        gen,
        box=cfg.box,
        task=TASK[supervision],
    )[0]  # (n, *s)
    return x_adv.detach()


def batch_perturbation(
    cfg: AdversarialConfig | None, supervision: str, seed: int
) -> Perturbation | None:
    """The trainer's hook: ``perturb(model, x, y, fine) -> x_adv``, or None for plain ERM."""
    if cfg is None or not cfg.active:
        return None
    if supervision not in ATTACK_LOSS:
        raise ValueError(f"supervision must be one of {sorted(ATTACK_LOSS)}, got {supervision!r}")
    gen = torch_generator(seed, "train", "adversarial")

    def perturb(model, x, y, fine):
        return perturb_batch(model, x, y, fine, cfg, supervision, gen)

    return perturb
