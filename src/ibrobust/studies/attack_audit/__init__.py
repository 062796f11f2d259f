"""Attack audit (kind ``attack_audit``): how close each attack comes to the exact robustness
of a model whose every l2 radius is known.

A model built from the data whose kind has exact radii (capability ``exact_radii``, e.g. the
hand-built robust reference on orthogonal clusters,
:func:`ibrobust.models.robust_reference.analytic_radius`) has an exact minimal l2 distance
to its decision boundary per point. An attack's critical radius on it (robust accuracy falls
to 50%, :func:`ibrobust.analysis.robustness.critical_radius`) can only be at or above the
median exact radius (up to the radius grid's interpolation); a strong attack comes close, a
weak one overstates robustness. The audit reports ``gap = attacked / exact - 1`` per attack
and seed and whether it is within ``tolerance``. Rules: ``rules/attack_audit.smk``; the
models and attacks come from the generic network rules (no training: the reference is built).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ibrobust.studies import figure_files
from ibrobust.studies.checks import check_attacks, check_reference, check_registry_names


def parts(cfg: dict, st: dict) -> list[dict[str, Any]]:
    """One part that trains nothing: its runs are the reference's (plan.reference_runs)."""
    return [dict(st, models=[], optimizers=[], supervisions=["binary"], part="main")]


def outputs(cfg: dict, name: str, default: bool) -> list[str]:
    return figure_files(name, [])


def check(cfg: dict, st: dict, where: str) -> None:
    check_registry_names(cfg, st, where, ("datasets", "attacks"))
    check_reference(cfg, st, where, st["datasets"], exact=True)
    check_attacks(cfg, {**st, "supervisions": ["binary"]}, where, st["datasets"])


def summarize(runs: list[dict[str, Any]], tolerance: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows per run and attack, mean/min/max over seeds per dataset and attack) from the
    attack summaries of the reference runs (each with ``critical_radius`` per attack and
    ``analytic_critical_radius``)."""
    rows = [
        {
            "dataset": r["dataset"],
            "seed": r["seed"],
            "attack": attack,
            "critical_radius": radius,
            "exact_radius": r["analytic_critical_radius"],
            "gap": radius / r["analytic_critical_radius"] - 1.0,
        }
        for r in runs
        for attack, radius in r["critical_radius"].items()
    ]
    table = pd.DataFrame(rows)
    table["passes"] = table.gap <= tolerance
    agg = (
        table.groupby(["dataset", "attack"], sort=False)
        .agg(
            critical_radius=("critical_radius", "mean"),
            exact_radius=("exact_radius", "mean"),
            gap_mean=("gap", "mean"),
            gap_max=("gap", "max"),
            passes=("passes", "all"),
            n=("seed", "count"),
        )
        .reset_index()
    )
    return table, agg
