"""Run a set of named attacks over a radius grid and tabulate robust accuracy.

Attack specs are the config's dicts: ``{"kind": "pgd", "norm", "loss", "steps",
"restarts", "step_size"}`` or ``{"kind": "universal"}``; kinds dispatch through a
registry. Radii are processed in increasing order and each attack only works on the
examples it has not fooled yet at a smaller radius (AutoAttack's loop): a perturbation
found at radius eps is admissible at every larger radius, so this saves work without
changing any outcome of the monotone table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn

from ibrobust.analysis.robustness import robust_accuracy_table
from ibrobust.attacks.losses import binary_correct, get_attack_loss
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.attacks.universal import universal_perturbation


@dataclass
class AttackContext:
    """What attacks may need besides the model: the cluster means and signs (universal)."""

    means: torch.Tensor | None = None
    sign: torch.Tensor | None = None


# (model, x, y, fine, eps (scalar), spec, ctx, gen) -> (n,) bool still correct
AttackFn = Callable[..., torch.Tensor]


def _pgd_attack(model, x, y, fine, eps, spec, ctx, gen):
    cfg = PGDConfig(**{k: spec[k] for k in ("norm", "steps", "restarts", "step_size") if k in spec})
    x_adv = pgd(model, x, y, fine, [eps], get_attack_loss(spec.get("loss", "margin")), cfg, gen)[0]
    return binary_correct(model, x_adv, y)


def _universal_attack(model, x, y, fine, eps, spec, ctx, gen):
    if ctx.means is None or ctx.sign is None:
        raise ValueError("the universal attack needs cluster means and signs (cluster data only)")
    x_adv = universal_perturbation(x, y, ctx.means, ctx.sign, [eps])[0]
    return binary_correct(model, x_adv, y)


ATTACKS: dict[str, AttackFn] = {"pgd": _pgd_attack, "universal": _universal_attack}


def correctness_over_radii(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    radii: list[float],
    spec: dict,
    ctx: AttackContext,
    gen: torch.Generator,
) -> torch.Tensor:
    """(R, n) bool: correct under the attack at each radius (monotone in the radius)."""
    try:
        fn = ATTACKS[spec["kind"]]
    except KeyError:
        raise ValueError(
            f"unknown attack kind {spec.get('kind')!r}; known: {sorted(ATTACKS)}"
        ) from None
    order = sorted(range(len(radii)), key=lambda i: radii[i])
    with torch.no_grad():
        alive = binary_correct(model, x, y)  # (n,) clean correctness
    out = torch.zeros(len(radii), x.shape[0], dtype=torch.bool)
    for i in order:
        idx = torch.nonzero(alive).flatten()
        if radii[i] > 0 and idx.numel():
            alive[idx] = fn(model, x[idx], y[idx], fine[idx], float(radii[i]), spec, ctx, gen)
        out[i] = alive
    return out


def evaluate_attacks(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    radii: list[float],
    specs: dict[str, dict],
    ctx: AttackContext,
    gen: torch.Generator,
    on_attack: Callable[[str], None] | None = None,
) -> tuple[pd.DataFrame, dict[str, torch.Tensor]]:
    """Tidy table (attack, eps, robust_acc, n; plus ``worst``) and the (R, n) masks."""
    correct = {}
    for name, spec in specs.items():
        correct[name] = correctness_over_radii(model, x, y, fine, radii, spec, ctx, gen)
        if on_attack is not None:
            on_attack(name)
    return robust_accuracy_table(correct, radii), correct
