"""What each attack kind applies to: its norm, the labels it aims at, what it needs.

Every attack kind states its policy as capabilities in its schema fragment
(``attacks/<kind>.schema.yaml``, block ``x-kind``; :data:`ibrobust.kinds.ATTACKS`), so an
attack's rules live with the attack and not in the config checks:

* ``norm``: a fixed threat model (e.g. the universal direction is l2); else the entry's
  ``norm`` key (default l2);
* ``aims``: ``binary`` (the binary readout's margin), ``task`` (whatever the evaluated task
  is); ``fine_losses``: the entry's ``loss`` values that aim at the fine labels instead
  (they need a k-class model);
* ``needs``: what the attack needs from the data (a dataset kind's ``offers``): ``box``
  (inputs in [0, 1]) or ``cluster_means``;
* ``binary_task``: on the binary task, the sub-attacks allowed (``key``, its ``default``,
  the ``allowed`` set and a ``hint``).

This module imports nothing heavy (the Snakefile reads it while parsing).
"""

from __future__ import annotations

from typing import Any

from ibrobust.kinds import ATTACKS
from ibrobust.norms import NORMS  # noqa: F401  (the one list)


def policy(kind: str) -> dict[str, Any]:
    """The capabilities of an attack kind (ValueError naming an unknown kind)."""
    return ATTACKS.capabilities(kind)


def attack_norm(spec: dict) -> str:
    """The threat model of an attack entry."""
    return policy(spec["kind"]).get("norm") or spec.get("norm", "l2")


def aims_fine(spec: dict) -> bool:
    """Whether the attack aims at the fine labels (its loss needs a k-class model)."""
    return spec.get("loss", "margin") in policy(spec["kind"]).get("fine_losses", ())


def attack_applies(spec: dict, supervision: str, task: str) -> bool:
    """Fine-label losses need a k-class model; on the fine task an attack must aim at the
    fine labels or the task itself (the binary margin and the universal direction aim at
    the binary readout)."""
    fine = aims_fine(spec)
    if fine and supervision != "multiclass":
        return False
    return not (task == "fine" and not fine and policy(spec["kind"]).get("aims") == "binary")


def needs(spec: dict) -> set[str]:
    """What the attack needs from the data: ``box`` and/or ``cluster_means``."""
    return set(policy(spec["kind"]).get("needs", ()))


def binary_task_problem(spec: dict) -> str | None:
    """Why the entry cannot run on the binary task (None when it can)."""
    rule = policy(spec["kind"]).get("binary_task")
    if rule is None:
        return None
    runs = spec.get(rule["key"]) or rule["default"]
    bad = sorted(set(runs) - set(rule["allowed"]))
    if not bad:
        return None
    return f"runs {bad}, which need >= 3-4 classes; {rule['hint']}"


def radius_grids(radii: Any) -> dict[str, list[float]]:
    """grid name -> radii: {"main": radii} for a list, the mapping itself for radii by norm."""
    if isinstance(radii, dict):
        return {norm: [float(r) for r in radii[norm]] for norm in NORMS if norm in radii}
    return {"main": [float(r) for r in radii]}


def grid_attacks(cfg: dict, attacks: list[str], grid: str) -> list[str]:
    """The attacks a grid runs: all of them on a list grid, those of its norm on a norm grid."""
    if grid not in NORMS:
        return list(attacks)
    return [a for a in attacks if attack_norm(cfg["attacks"][a]) == grid]
