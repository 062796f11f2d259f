"""Per-point critical radii of one trained model by bisection (the refined measure of a
critical radius read off a grid): the attack job's grid (the same attacks, radii, points,
readout and random stream, so the same masks), then each point's grid cell bisected to a
tolerance under the worst case over the attacks (:mod:`ibrobust.attacks.bisection`).

Its own module, not :mod:`ibrobust.stages.robustness`: the attack jobs' code hash does not
cover it, so adding the refinement reruns no attack job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import torch

from ibrobust.attacks.bisection import (
    bisect_radii,
    crossing_bracket,
    crossing_cell,
    grid_brackets,
    worst_case_oracle,
)
from ibrobust.attacks.suite import AttackContext, evaluate_attacks
from ibrobust.data.dataset import Dataset
from ibrobust.models.readout import with_readout
from ibrobust.models.registry import load_model
from ibrobust.stages.robustness import attack_points

# which points :func:`refine_radii` bisects: every point (per-point radii for their
# quantiles) or only those of the crossing's grid cell (the critical radius alone, cheaper)
POINTS_BISECTED = ("all", "crossing")


def _to_bisect(grid_lo, grid_hi, level: float, points_bisected: str) -> torch.Tensor:
    """The points to bisect: every point, or ("crossing") those of the crossing's cell."""
    if points_bisected not in POINTS_BISECTED:
        raise ValueError(
            f"points_bisected must be one of {POINTS_BISECTED}, got {points_bisected!r}"
        )
    if points_bisected == "crossing":
        return crossing_cell(grid_lo, grid_hi, level)
    return torch.ones(grid_lo.numel(), dtype=torch.bool)


def _bisected(oracle, grid_lo, grid_hi, todo: torch.Tensor, tolerance: float):
    """(lo, hi): the grid brackets with the ``todo`` points' bisected to ``tolerance``."""
    lo, hi = grid_lo.clone(), grid_hi.clone()
    if bool(todo.any()):
        idx = todo.nonzero().flatten()

        def sub_oracle(j: torch.Tensor, eps: float) -> torch.Tensor:
            return oracle(idx[j], eps)

        lo[idx], hi[idx] = bisect_radii(sub_oracle, grid_lo[idx], grid_hi[idx], tolerance)
    return lo, hi


def refine_radii(
    state: dict,
    data: Dataset,
    attacks: Mapping[str, dict],
    radii: list[float],
    points: int | None,
    task: str,
    gen: torch.Generator,
    tolerance: float,
    level: float = 0.5,
    readout: str = "sum",
    where: str = "data",
    points_bisected: str = "all",
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(per-point table, summary) of the saved model ``state`` on ``data``'s first ``points``
    test points: per point its grid cell (grid_lo, grid_hi] and its bisected bracket
    (lo, hi] (hi - lo <= ``tolerance``; hi = inf: never flipped on the grid; with
    ``points_bisected`` "crossing" only the points of the crossing's grid cell are bisected,
    :func:`~ibrobust.attacks.bisection.crossing_cell`, the others keep their cell); the summary
    holds the critical radius (the ``level`` crossing, :func:`crossing_bracket`) from the
    grid cells and from the bisection, the grid's worst-case robust accuracy per radius (to
    check against the attack job's table) and quantiles of the per-point radii. On the CPU
    (the grid's random stream is the attack job's there)."""
    net = load_model(state)
    for prm in net.parameters():
        prm.requires_grad_(False)
    model = with_readout(net, readout)
    test = attack_points(data, points, task, where)
    ctx = AttackContext(data.means, data.sign, task=task, box=data.box)
    table, masks = evaluate_attacks(
        model, test.x, test.y, test.fine, list(radii), dict(attacks), ctx, gen
    )
    grid_lo, grid_hi = grid_brackets(masks, radii)
    oracle = worst_case_oracle(model, test.x, test.y, test.fine, attacks, ctx, gen)
    todo = _to_bisect(grid_lo, grid_hi, level, points_bisected)
    lo, hi = _bisected(oracle, grid_lo, grid_hi, todo, tolerance)
    per_point = pd.DataFrame(
        {
            "point": range(len(test)),
            "y": test.y.cpu().numpy(),
            "grid_lo": grid_lo.numpy(),
            "grid_hi": grid_hi.numpy(),
            "lo": lo.numpy(),
            "hi": hi.numpy(),
        }
    )
    summary = _summary(table, grid_lo, grid_hi, lo, hi, level, todo)
    summary.update(
        tolerance=tolerance, readout=readout, attacks=list(attacks), radii=list(radii),
        points_bisected=points_bisected, bisected=int(todo.sum()),
    )  # fmt: skip
    return per_point, summary


def _summary(table, grid_lo, grid_hi, lo, hi, level: float, todo) -> dict[str, Any]:
    """The run's refined critical radius, its grid cell, and the per-point radii's spread
    (the widest bracket over the bisected points ``todo``; the radii's quantiles and mean
    only where every point was bisected, NaN else: the others are grid cells)."""
    grid, fine = crossing_bracket(grid_lo, grid_hi, level), crossing_bracket(lo, hi, level)
    every = bool(todo.all())
    finite = hi[torch.isfinite(hi)] if every else hi[:0]
    bisected = (hi - lo)[todo & torch.isfinite(hi)]
    qs = (0.1, 0.25, 0.5, 0.75, 0.9)
    worst = table[table.attack == "worst"].sort_values("eps")
    summary: dict[str, Any] = {
        "n_points": int(lo.numel()),
        "level": level,
        "critical_radius": fine.value,
        "critical_radius_lo": fine.lo,
        "critical_radius_hi": fine.hi,
        "grid_critical_radius_lo": grid.lo,
        "grid_critical_radius_hi": grid.hi,
        "censored_points": int((~torch.isfinite(hi)).sum()),
        "flipped_clean": int((hi == 0).sum()),
        "widest_bracket": float(bisected.max()) if bisected.numel() else 0.0,
        "radius_quantiles": {
            str(q): float(torch.quantile(finite, q)) if finite.numel() else float("nan") for q in qs
        },
        "radius_mean": float(finite.mean()) if finite.numel() else float("nan"),
        "grid_worst_acc": dict(zip(map(str, worst.eps), worst.robust_acc, strict=True)),
    }
    return summary
