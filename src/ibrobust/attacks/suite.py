"""Run a set of named attacks over a radius grid and tabulate robust accuracy.

Attack specs are the config's dicts, ``{"kind": ..., <keys of that kind>}``; each kind's
module (:data:`ibrobust.kinds.ATTACKS`, loaded on demand so that a job's code hash covers
only its own attacks) exposes ``parse_spec`` and ``run_spec``:

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

:func:`evaluate_attacks_readouts` evaluates one network under several binary readouts
(:func:`ibrobust.models.readout.with_readout`) at once: an attack whose perturbation reads
no readout (its kind's policy says its loss aims at the fine labels,
:func:`ibrobust.attacks.policy.aims_fine`) runs once and is judged under every readout
(its kind's ``run_spec_readouts``), on the union over readouts of the points still correct
at the smaller radius; every other attack runs once per readout. Each readout gets its own
table and worst case: the worst case is taken over the attacks of one readout, never
across readouts.

Progress (:class:`ibrobust.progress.Progress`, optional): a unit is one attack at one radius
(under one readout, for an attack that is not shared across readouts), named like
``pgd_ce argmax eps=2``; inside a unit the attack ticks between its batches
(``AttackContext.tick``: each PGD restart, each AutoAttack batch), so a slow radius is not
silent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import nn

from ibrobust import kinds
from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.policy import aims_fine
from ibrobust.attacks.tables import robust_accuracy_table
from ibrobust.attacks.tasks import Task, correct_in_batches, get_task
from ibrobust.models.readout import with_readout
from ibrobust.progress import Progress, ticker


@dataclass
class AttackContext:
    """What attacks need besides the model and the points.

    ``means`` (k, d) / ``sign`` (k,): the cluster means and signs (universal attack only);
    ``task``: what counts as correct (``"binary"`` or ``"fine"``, or a Task); ``box``: the
    input range, None for unbounded data, (0, 1) for images; ``eval_batch_size``: points
    per forward pass when judging clean correctness; ``tick``: called by an attack between
    its batches (progress; the suite sets it from its :class:`~ibrobust.progress.Progress`).
    """

    means: torch.Tensor | None = None
    sign: torch.Tensor | None = None
    task: Task | str = "binary"
    box: tuple[float, float] | None = None
    eval_batch_size: int = 1000
    tick: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        self.task = get_task(self.task)
        if self.box is not None:
            lo, hi = (float(b) for b in self.box)
            if not lo < hi:
                raise ValueError(f"box must be (lo, hi) with lo < hi, got {self.box}")
            self.box = (lo, hi)
        if self.eval_batch_size < 1:
            raise ValueError(f"eval_batch_size must be >= 1, got {self.eval_batch_size}")


def parse_attack(spec: dict) -> tuple[kinds.AttackKind, Any]:
    """The module of an attack spec's kind (:data:`ibrobust.kinds.ATTACKS`, loaded on demand)
    and its validated settings (ValueError naming the bad kind or key). The module exposes
    ``run_spec(model, x, y, fine, eps, settings, ctx, gen) -> (n,) bool still correct``."""
    kind = spec.get("kind") if isinstance(spec, dict) else None
    module = kinds.ATTACKS.load(kind)
    return module, module.parse_spec({key: v for key, v in spec.items() if key != "kind"})


def describe_attack(spec: dict) -> dict:
    """What an attack spec runs, flat (its kind's ``describe``): e.g. which AutoAttack
    version, iterations and restarts a robust accuracy comes from."""
    module, settings = parse_attack(spec)
    return {"kind": spec["kind"], **module.describe(settings)}


def correctness_over_radii(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    radii: list[float],
    spec: dict,
    ctx: AttackContext,
    gen: torch.Generator,
    progress: Progress | None = None,
    label: str = "",
) -> torch.Tensor:
    """(R, n) bool: correct under the attack at each radius (monotone in the radius).
    ``progress`` advances by one unit per radius (``label`` names the attack in it)."""
    kind, cfg = parse_attack(spec)
    if any(not r >= 0 for r in radii):
        raise ValueError(f"radii must be >= 0, got {list(radii)}")
    order = sorted(range(len(radii)), key=lambda i: radii[i])
    ctx = _with_ticks(ctx, progress)
    with attack_mode(model):
        alive = correct_in_batches(ctx.task, model, x, y, fine, ctx.eval_batch_size)  # (n,)
    out = torch.zeros(len(radii), x.shape[0], dtype=torch.bool, device=x.device)
    for i in order:
        _begin(progress, label, radii[i])
        idx = torch.nonzero(alive).flatten()
        if radii[i] > 0 and idx.numel():
            alive[idx] = kind.run_spec(
                model, x[idx], y[idx], fine[idx], float(radii[i]), cfg, ctx, gen
            )
        out[i] = alive
        if progress is not None:
            progress.advance()
    return out


def _with_ticks(ctx: AttackContext, progress: Progress | None) -> AttackContext:
    """``ctx`` whose attacks tick ``progress`` between their batches."""
    return ctx if progress is None else dataclasses.replace(ctx, tick=ticker(progress))


def _begin(progress: Progress | None, label: str, eps: float) -> None:
    if progress is not None:
        progress.begin(f"{label} eps={float(eps):g}".strip())


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
    progress: Progress | None = None,
) -> tuple[pd.DataFrame, dict[str, torch.Tensor]]:
    """Tidy table (attack, eps, robust_acc, n; plus ``worst``) and the (R, n) masks;
    ``progress`` expects one unit per attack and radius."""
    for spec in specs.values():  # fail on a bad spec before any attack runs
        parse_attack(spec)
    if progress is not None:
        progress.expect(len(specs) * len(radii))
    correct = {}
    for name, spec in specs.items():
        correct[name] = correctness_over_radii(
            model, x, y, fine, radii, spec, ctx, gen, progress, name
        )
        if on_attack is not None:
            on_attack(name)
    return robust_accuracy_table(correct, radii), correct


def shared_across_readouts(spec: dict) -> bool:
    """Whether one run of the attack serves every binary readout: its kind's declared
    policy says the entry's loss aims at the fine labels (``x-kind`` ``fine_losses``), so
    its perturbation reads the logits, not the readout; only its judging differs."""
    return aims_fine(spec)


def correctness_over_radii_readouts(
    models: Sequence[nn.Module],
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    radii: list[float],
    spec: dict,
    ctx: AttackContext,
    gen: torch.Generator,
    progress: Progress | None = None,
    label: str = "",
) -> torch.Tensor:
    """(J, R, n) bool: correct under ``models[j]`` (one network read through J readouts) at
    each radius, for an attack shared across readouts (monotone in the radius per readout).

    At each radius the attack runs once on the points still correct under at least one
    readout, and each readout keeps its own outcome (a point dead under a readout stays
    dead). With one model this is :func:`correctness_over_radii` (same draws, same masks).
    ``progress`` advances by one unit per radius."""
    kind, cfg = parse_attack(spec)
    run = getattr(kind, "run_spec_readouts", None)
    if run is None:
        raise ValueError(f"attack kind {spec['kind']!r} has no run judged under several readouts")
    if any(not r >= 0 for r in radii):
        raise ValueError(f"radii must be >= 0, got {list(radii)}")
    order = sorted(range(len(radii)), key=lambda i: radii[i])
    ctx = _with_ticks(ctx, progress)
    with ExitStack() as stack:
        for m in models:
            stack.enter_context(attack_mode(m))
        alive = torch.stack(
            [correct_in_batches(ctx.task, m, x, y, fine, ctx.eval_batch_size) for m in models]
        )  # (J, n)
    out = torch.zeros(len(models), len(radii), x.shape[0], dtype=torch.bool, device=x.device)
    for i in order:
        _begin(progress, label, radii[i])
        idx = torch.nonzero(alive.any(0)).flatten()  # the union over readouts
        if radii[i] > 0 and idx.numel():
            live = alive[:, idx]
            still = run(models, x[idx], y[idx], fine[idx], float(radii[i]), cfg, ctx, gen, live)
            alive[:, idx] = live & still
        out[:, i] = alive
        if progress is not None:
            progress.advance()
    return out


def evaluate_attacks_readouts(
    model: nn.Module,
    readouts: Sequence[str],
    x: torch.Tensor,
    y: torch.Tensor,
    fine: torch.Tensor,
    radii: list[float],
    specs: dict[str, dict],
    ctx: AttackContext,
    gen: torch.Generator,
    on_attack: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, torch.Tensor]]]:
    """Per readout: the tidy table of :func:`evaluate_attacks` and the (R, n) masks, with
    each attack shared across readouts (:func:`shared_across_readouts`) run once.

    Attacks run in the order of ``specs``; an attack that is not shared runs under each
    readout in the order of ``readouts``, all on the one generator ``gen``. With one
    readout this is ``evaluate_attacks(with_readout(model, readout), ...)`` exactly.
    ``progress`` expects one unit per radius of each run of an attack."""
    if not readouts or len(set(readouts)) != len(readouts):
        raise ValueError(f"readouts must be distinct and at least one, got {list(readouts)}")
    for spec in specs.values():  # fail on a bad spec before any attack runs
        parse_attack(spec)
    shared = {name: shared_across_readouts(spec) for name, spec in specs.items()}
    if progress is not None:
        runs = sum(1 if shared[name] else len(readouts) for name in specs)
        progress.expect(runs * len(radii))
    views = [with_readout(model, r) for r in readouts]
    correct: dict[str, dict[str, torch.Tensor]] = {r: {} for r in readouts}
    for name, spec in specs.items():
        if shared[name]:
            masks = correctness_over_radii_readouts(
                views, x, y, fine, radii, spec, ctx, gen, progress, name
            )
            for r, m in zip(readouts, masks, strict=True):
                correct[r][name] = m
        else:
            for r, v in zip(readouts, views, strict=True):
                correct[r][name] = correctness_over_radii(
                    v, x, y, fine, radii, spec, ctx, gen, progress, f"{name} {r}"
                )
        if on_attack is not None:
            on_attack(name)
    tables = {r: robust_accuracy_table(correct[r], radii) for r in readouts}
    return tables, correct
