"""Run a set of named attacks over a radius grid and tabulate robust accuracy.

Attack specs are the config's dicts, ``{"kind": ..., <keys of that kind>}``; kinds
dispatch through the registry :data:`ATTACKS`:

* ``pgd``: :func:`ibrobust.attacks.pgd.pgd`; keys ``norm``, ``loss``, ``steps``,
  ``restarts``, ``step_size``, ``random_start``, ``batch_size``, ``l1_top``;
* ``autoattack``: :func:`ibrobust.attacks.autoattack.autoattack` (images in [0, 1] only);
  keys ``norm``, ``version``, ``attacks``, ``batch_size``, ``n_iter``, ``n_restarts``,
  ``n_queries``, ``n_target_classes``; its seed is drawn from the suite's generator;
* ``universal``: the fixed cluster direction (cluster data only); it has no keys and
  ignores any others (a flat config schema fills PGD defaults into every attack entry).

A ``pgd`` or ``autoattack`` spec with a key its kind does not know is a ValueError. What
is correct, and the input box, come from the :class:`AttackContext` (task ``binary`` or
``fine``; box None or (0, 1)).

Radii are processed in increasing order and each attack only works on the examples still
correct at the next smaller radius (AutoAttack's loop): a perturbation found at radius eps
is admissible at every larger radius, so this saves work without changing any outcome of
the monotone table. The worst case over attacks (``robust_accuracy_table``'s ``worst``) is
the robust accuracy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import nn

from ibrobust.analysis.robustness import robust_accuracy_table
from ibrobust.attacks.autoattack import AutoAttackConfig, autoattack
from ibrobust.attacks.losses import get_attack_loss
from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.attacks.tasks import Task, get_task
from ibrobust.attacks.universal import universal_perturbation


@dataclass
class AttackContext:
    """What attacks need besides the model and the points.

    ``means`` (k, d) / ``sign`` (k,): the cluster means and signs (universal attack only);
    ``task``: what counts as correct (``"binary"`` or ``"fine"``, or a Task); ``box``: the
    input range, None for unbounded data, (0, 1) for images; ``eval_batch_size``: points
    per forward pass when judging clean correctness.
    """

    means: torch.Tensor | None = None
    sign: torch.Tensor | None = None
    task: Task | str = "binary"
    box: tuple[float, float] | None = None
    eval_batch_size: int = 1000

    def __post_init__(self) -> None:
        self.task = get_task(self.task)
        if self.box is not None:
            lo, hi = (float(b) for b in self.box)
            if not lo < hi:
                raise ValueError(f"box must be (lo, hi) with lo < hi, got {self.box}")
            self.box = (lo, hi)
        if self.eval_batch_size < 1:
            raise ValueError(f"eval_batch_size must be >= 1, got {self.eval_batch_size}")


# run(model, x, y, fine, eps (scalar > 0), parsed config, ctx, gen) -> (n,) bool still correct
RunFn = Callable[
    [
        nn.Module,
        torch.Tensor,
        torch.Tensor,
        torch.Tensor,
        float,
        Any,
        AttackContext,
        torch.Generator,
    ],
    torch.Tensor,
]


@dataclass(frozen=True)
class AttackKind:
    """An attack kind: ``parse`` validates a spec (without ``kind``) once; ``run`` attacks."""

    parse: Callable[[dict], Any]
    run: RunFn


def _strict(kind: str, spec: dict, known: set[str]) -> None:
    unknown = sorted(set(spec) - known)
    if unknown:
        raise ValueError(
            f"unknown key(s) {unknown} for attack kind {kind!r}; known: {sorted(known)}"
        )


@dataclass(frozen=True)
class PGDSpec:
    cfg: PGDConfig
    loss: str = "margin"


_PGD_KEYS = {f.name for f in dataclasses.fields(PGDConfig)} | {"loss"}


def _parse_pgd(spec: dict) -> PGDSpec:
    _strict("pgd", spec, _PGD_KEYS)
    loss = spec.get("loss", "margin")
    get_attack_loss(loss)  # ValueError on an unknown loss
    return PGDSpec(PGDConfig(**{k: v for k, v in spec.items() if k != "loss"}), loss)


def _run_pgd(model, x, y, fine, eps, spec: PGDSpec, ctx, gen):
    x_adv = pgd(model, x, y, fine, [eps], spec.loss, spec.cfg, gen, box=ctx.box, task=ctx.task)[0]
    return _correct(model, x_adv, y, fine, ctx)


def _parse_autoattack(spec: dict) -> AutoAttackConfig:
    _strict("autoattack", spec, {f.name for f in dataclasses.fields(AutoAttackConfig)})
    return AutoAttackConfig(**spec)


def _run_autoattack(model, x, y, fine, eps, cfg: AutoAttackConfig, ctx, gen):
    seed = int(torch.randint(2**31 - 1, (1,), generator=gen))  # one draw per radius
    res = autoattack(model, x, y, fine, eps, cfg, seed=seed, box=ctx.box, task=ctx.task)
    return res.correct


def _run_universal(model, x, y, fine, eps, _cfg, ctx, gen):
    if ctx.means is None or ctx.sign is None:
        raise ValueError("the universal attack needs cluster means and signs (cluster data only)")
    x_adv = universal_perturbation(x, y, ctx.means, ctx.sign, [eps])[0]
    return _correct(model, x_adv, y, fine, ctx)


ATTACKS: dict[str, AttackKind] = {
    "pgd": AttackKind(_parse_pgd, _run_pgd),
    "autoattack": AttackKind(_parse_autoattack, _run_autoattack),
    "universal": AttackKind(lambda spec: None, _run_universal),
}


def parse_attack(spec: dict) -> tuple[AttackKind, Any]:
    """The kind of an attack spec and its validated config (ValueError naming the bad key)."""
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind not in ATTACKS:
        raise ValueError(f"unknown attack kind {kind!r}; known: {sorted(ATTACKS)}")
    k = ATTACKS[kind]
    return k, k.parse({key: v for key, v in spec.items() if key != "kind"})


@torch.no_grad()
def _correct(model, x, y, fine, ctx: AttackContext) -> torch.Tensor:
    """(n,) bool under the context's task, ``ctx.eval_batch_size`` points per forward pass."""
    b = ctx.eval_batch_size
    parts = [
        ctx.task.correct(model, x[lo : lo + b], y[lo : lo + b], fine[lo : lo + b])
        for lo in range(0, x.shape[0], b)
    ]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.bool, device=x.device)


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
    kind, cfg = parse_attack(spec)
    if any(not r >= 0 for r in radii):
        raise ValueError(f"radii must be >= 0, got {list(radii)}")
    order = sorted(range(len(radii)), key=lambda i: radii[i])
    with attack_mode(model):
        alive = _correct(model, x, y, fine, ctx)  # (n,) clean correctness
    out = torch.zeros(len(radii), x.shape[0], dtype=torch.bool, device=x.device)
    for i in order:
        idx = torch.nonzero(alive).flatten()
        if radii[i] > 0 and idx.numel():
            alive[idx] = kind.run(model, x[idx], y[idx], fine[idx], float(radii[i]), cfg, ctx, gen)
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
    for spec in specs.values():  # fail on a bad spec before any attack runs
        parse_attack(spec)
    correct = {}
    for name, spec in specs.items():
        correct[name] = correctness_over_radii(model, x, y, fine, radii, spec, ctx, gen)
        if on_attack is not None:
            on_attack(name)
    return robust_accuracy_table(correct, radii), correct
