"""Study kinds as plug-ins: one package per kind plus one rules file.

A study kind ``<kind>`` is the package ``ibrobust.studies.<kind>`` (its config checks, its
planning: which parts it trains, which dataset sweeps it derives, which outputs a study
entry of the kind builds) with its schema fragment ``schema.yaml`` beside it, whose
``x-kind`` names its rules file (``rules``) and whether it trains through the generic
network rules (``network``). The registry is :data:`ibrobust.kinds.STUDIES` (one line per
kind); this module holds thin helpers over it, :mod:`~ibrobust.studies.expansion` the expanded
config the studies derive (sweep variants, scale-ladder rungs). The config validation, the Snakefile
(which includes the registered rules files) and the targets read them; none names a kind.

A kind's package defines ``check`` and ``outputs``; ``task``, ``sweeps``, ``parts`` and
``optimizer_sweeps`` are optional (:func:`hook` gives the default; see
:class:`ibrobust.kinds.StudyKind`).

This module imports nothing heavy: the Snakefile reads it while parsing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ibrobust.kinds import STUDIES, StudyKind


def load(kind: str) -> StudyKind:
    """The package of a study kind (ValueError naming it if unknown)."""
    return STUDIES.load(kind)  # type: ignore[return-value]


def _task(supervision: str) -> str:
    return "binary"  # a k-class model is judged by its binary readout


def _none(*args: Any) -> list:
    return []


def _parts(kind: str) -> Callable[[dict, dict], list[dict[str, Any]]]:
    def parts(cfg: dict, st: dict) -> list[dict[str, Any]]:
        return [dict(st, part="main")] if STUDIES.capability(kind, "network") else []

    return parts


OPTIONAL = ("task", "sweeps", "optimizer_sweeps", "parts")


def hook(kind: str, name: str) -> Callable:
    """The study kind's ``name`` function, or its default: ``task`` -> "binary" (what
    counts as correct: the binary readout), ``sweeps`` / ``optimizer_sweeps`` -> none,
    ``parts`` -> the study itself as its one part "main" (network studies; else none)."""
    if name not in OPTIONAL:
        raise ValueError(f"{name!r} is not an optional study hook {OPTIONAL}")
    found = getattr(load(kind), name, None)
    if found is not None:
        return found
    return {"task": _task, "sweeps": _none, "optimizer_sweeps": _none}.get(name) or _parts(kind)


def study_task(kind: str, supervision: str) -> str:
    """What counts as correct for a model of a study kind: ``binary`` or ``fine``."""
    return hook(kind, "task")(supervision)


def rules_files() -> dict[str, str]:
    """Study kind -> its rules file (relative to rules/), in registry order."""
    return {
        kind: STUDIES.capability(kind, "rules")
        for kind in STUDIES.kinds()
        if STUDIES.capability(kind, "rules")
    }


def studies_of(cfg: dict, kind: str) -> list[str]:
    """Names of the config's studies of one kind."""
    return [name for name, st in cfg["studies"].items() if st["kind"] == kind]


def study_outputs(cfg: dict, name: str, default: bool = False) -> list[str]:
    return load(cfg["studies"][name]["kind"]).outputs(cfg, name, default)


def figure_files(
    name: str, figures: list[str], tables: tuple[str, ...] = ("summary",)
) -> list[str]:
    """PNG + PDF + CSV of each figure and CSV + MD of each table under results/<name>/figures."""
    base = f"results/{name}/figures/"
    return [f"{base}{n}{ext}" for n in figures for ext in (".png", ".pdf", ".csv")] + [
        f"{base}{t}{ext}" for t in tables for ext in (".csv", ".md")
    ]
