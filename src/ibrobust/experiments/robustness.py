"""Robustness evaluation of one trained model: every attack over a radius grid, the worst
case, critical radii, clean accuracy and (for a model kind with exact radii, e.g. the robust
reference) the exact radius.

:func:`evaluate_robustness` is what the workflow's attack job runs; the model is read as a
binary classifier through ``readout`` (:func:`ibrobust.models.readout.with_readout`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import torch

from ibrobust import kinds
from ibrobust.analysis.robustness import critical_radius
from ibrobust.attacks.suite import AttackContext, describe_attack, evaluate_attacks
from ibrobust.attacks.tasks import correct_in_batches
from ibrobust.data.dataset import Dataset
from ibrobust.models.readout import with_readout
from ibrobust.models.registry import load_model


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
    readout: str,
    gen: torch.Generator,
    on_attack: Callable[[str], None] | None = None,
    where: str = "data",
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(robust-accuracy table, summary) of the saved model ``state`` on ``data``'s test set."""
    net = load_model(state)
    for prm in net.parameters():
        prm.requires_grad_(False)
    model = with_readout(net, readout)
    test = attack_points(data, points, task, where)
    ctx = AttackContext(data.means, data.sign, task=task, box=data.box)
    table, _ = evaluate_attacks(
        model, test.x, test.y, test.fine, list(radii), dict(attacks), ctx, gen, on_attack=on_attack
    )
    summary: dict[str, Any] = {"n_points": len(test), "radii": list(radii)}
    summary["critical_radius"], summary["robust_acc"] = {}, {}
    for name, g in table.groupby("attack", sort=False):
        g = g.sort_values("eps")
        summary["critical_radius"][name] = critical_radius(
            g.eps.to_numpy(), g.robust_acc.to_numpy()
        )
        summary["robust_acc"][name] = dict(zip(map(str, g.eps), g.robust_acc, strict=True))
    summary["task"], summary["readout"] = task, readout
    # what ran: e.g. the AutoAttack version, iterations and restarts behind each number
    summary["settings"] = {name: describe_attack(spec) for name, spec in attacks.items()}
    correct = correct_in_batches(ctx.task, model, test.x, test.y, test.fine, 1000)
    summary["clean_acc"] = float(correct.float().mean())
    if kinds.MODELS.capability(state["kind"], "exact_radii"):
        r = kinds.MODELS.load(state["kind"]).exact_radius(net, test.x, test.y)
        summary["analytic_radius_median"] = float(r.nanmedian())
        summary["analytic_critical_radius"] = float(r.nanquantile(0.5))
    return table, summary
