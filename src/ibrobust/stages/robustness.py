"""Robustness evaluation of one trained model: every attack over a radius grid, the worst
case, critical radii, clean accuracy and (for a model kind with exact radii, e.g. the robust
reference) the exact radius.

:func:`evaluate_robustness` is what the workflow's attack jobs run; the model is read as a
binary classifier through each of ``readouts`` (:func:`ibrobust.models.readout.with_readout`):
one readout for a model attacked on its own score, the study's list for a k-class model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import torch

from ibrobust import kinds
from ibrobust.analysis.robustness import critical_radius
from ibrobust.attacks.suite import (
    AttackContext,
    describe_attack,
    evaluate_attacks_readouts,
    shared_across_readouts,
)
from ibrobust.attacks.tasks import correct_in_batches
from ibrobust.data.dataset import Dataset
from ibrobust.device import resolve_device
from ibrobust.models.readout import READOUTS, with_readout
from ibrobust.models.registry import load_model
from ibrobust.progress import Progress, Report


def attack_points(data: Dataset, points: int | None, task: str, where: str = "data"):
    """The first ``points`` test points; ValueError when they have one binary label while
    the test split has both (a class-sorted source)."""
    test = data.test.head(points)
    if task == "binary" and len(set(test.y.tolist())) < 2 <= len(set(data.test.y.tolist())):
        raise ValueError(
            f"{where}: the first {len(test)} test points (attack_points) all have one binary "
            "label although the test split has both: the split is ordered by class (e.g. a "
            "class-sorted .npz source); shuffle the source's rows"
        )
    return test


def evaluate_robustness(
    state: dict,
    data: Dataset,
    attacks: dict[str, dict],
    radii: list[float],
    points: int | None,
    task: str,
    readouts: Sequence[str],
    gen: torch.Generator,
    on_attack: Callable[[str], None] | None = None,
    where: str = "data",
    device: torch.device | str | None = "cpu",
    on_progress: Report | None = None,
) -> dict[str, tuple[pd.DataFrame, dict[str, Any]]]:
    """readout -> (robust-accuracy table, summary) of the saved model ``state`` on ``data``'s
    test set, read through each of ``readouts`` (:func:`ibrobust.attacks.suite.
    evaluate_attacks_readouts`: an attack aiming at the fine labels runs once and is judged
    under every readout). The attacks run under the readouts in the order of
    :data:`~ibrobust.models.readout.READOUTS` whatever the order given, so the numbers
    depend on the set of readouts only. ``device`` (the config key): model, points and
    cluster means move there once, the random draws stay on ``gen``'s (CPU), so ``auto``
    without CUDA is ``cpu`` exactly. ``on_progress(done, total, what)``: the attacks'
    progress (:class:`ibrobust.progress.Progress`; one unit per attack run and radius)."""
    unknown = sorted(set(readouts) - set(READOUTS))
    if unknown or not readouts:
        raise ValueError(f"readouts must be a non-empty subset of {READOUTS}, got {readouts}")
    order = [r for r in READOUTS if r in readouts]
    dev = resolve_device(device)
    net = load_model(state).to(dev)
    for prm in net.parameters():
        prm.requires_grad_(False)
    test = attack_points(data, points, task, where).to(dev)
    means, sign = (None if t is None else t.to(dev) for t in (data.means, data.sign))
    ctx = AttackContext(means, sign, task=task, box=data.box)
    tables, _ = evaluate_attacks_readouts(
        net, order, test.x, test.y, test.fine, list(radii), dict(attacks), ctx, gen, on_attack,
        Progress(on_progress),
    )  # fmt: skip
    shared = [name for name, spec in attacks.items() if shared_across_readouts(spec)]
    settings = {name: describe_attack(spec) for name, spec in attacks.items()}
    out = {}
    for readout in readouts:
        summary = _summary(tables[readout], radii, len(test))
        summary["task"], summary["readout"] = task, readout
        # attacks run once and judged under every readout of the job (the union of their
        # live points decides restarts and radii): their numbers depend on that set
        summary["shared_readouts"] = {name: order for name in shared} if len(order) > 1 else {}
        # what ran: e.g. the AutoAttack version, iterations and restarts behind each number
        summary["settings"] = settings
        model = with_readout(net, readout)
        correct = correct_in_batches(ctx.task, model, test.x, test.y, test.fine, 1000)
        summary["clean_acc"] = float(correct.float().mean())
        if kinds.MODELS.capability(state["kind"], "exact_radii"):
            r = kinds.MODELS.load(state["kind"]).exact_radius(net, test.x, test.y)
            summary["analytic_radius_median"] = float(r.nanmedian())
            summary["analytic_critical_radius"] = float(r.nanquantile(0.5))
        out[readout] = (tables[readout], summary)
    return out


def _summary(table: pd.DataFrame, radii: list[float], n_points: int) -> dict[str, Any]:
    """Critical radius and robust accuracy per attack (and ``worst``) of one readout's table."""
    summary: dict[str, Any] = {"n_points": n_points, "radii": list(radii)}
    summary["critical_radius"], summary["robust_acc"] = {}, {}
    for name, g in table.groupby("attack", sort=False):
        g = g.sort_values("eps")
        summary["critical_radius"][name] = critical_radius(
            g.eps.to_numpy(), g.robust_acc.to_numpy()
        )
        summary["robust_acc"][name] = dict(zip(map(str, g.eps), g.robust_acc, strict=True))
    return summary
