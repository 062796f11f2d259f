"""Study kinds as plug-ins: one package per kind plus one rules file.

A study kind ``<kind>`` is the package ``ibrobust.studies.<kind>`` (its config checks, its
planning: which parts it trains, which dataset sweeps it derives, which outputs a study
entry of the kind builds; and its claims) with its schema fragment ``schema.yaml`` beside
it, and the rules file ``rules/<RULES>`` with its rules and input functions. This module
is the registry: one line per kind. The config validation (:mod:`ibrobust.config`), the
Snakefile (which includes the registered rules files) and the targets read it; none of
them names a kind.

This module imports nothing heavy: the Snakefile reads it while parsing.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import yaml

# study kind -> its package (the package's RULES names its rules file under rules/)
REGISTRY: dict[str, str] = {
    "feature_averaging": "ibrobust.studies.feature_averaging",
    "feature_averaging_images": "ibrobust.studies.feature_averaging_images",
    "price_linear": "ibrobust.studies.price_linear",
    "prelu": "ibrobust.studies.prelu",
    "attack_audit": "ibrobust.studies.attack_audit",
    "price_nn": "ibrobust.studies.price_nn",
    "margin": "ibrobust.studies.margin",
}


class StudyKind(Protocol):
    """What a study kind's package exposes (module attributes and functions)."""

    RULES: str  # its rules file, relative to rules/
    NETWORK: bool  # trains through the generic dataset -> train -> analyze/attack rules
    claims: tuple  # its claim declarations (ibrobust.claims); () until declared

    def check(self, cfg: dict, st: dict, where: str) -> None:
        """Cross-checks of one study entry (ConfigError naming the key path)."""

    def sweeps(self, st: dict) -> list[tuple[str, str, list]]:
        """(base dataset, key, values) of the dataset variants the study derives."""

    def parts(self, cfg: dict, st: dict) -> list[dict[str, Any]]:
        """The cross products a network study trains (each with its ``part`` name)."""

    def task(self, supervision: str) -> str:
        """What counts as correct for a model of this supervision: binary or fine."""

    def outputs(self, cfg: dict, name: str, default: bool) -> list[str]:
        """Every file ``snakemake <name>`` builds (``default``: the default target's)."""


def module_name(kind: str) -> str:
    try:
        return REGISTRY[kind]
    except KeyError:
        raise ValueError(f"unknown study kind {kind!r}; known: {sorted(REGISTRY)}") from None


def load(kind: str) -> StudyKind:
    """The package of a study kind (ValueError naming it if unknown)."""
    module: ModuleType = importlib.import_module(module_name(kind))
    return module  # type: ignore[return-value]


def package_dir(kind: str) -> Path:
    return Path(__file__).resolve().parent / module_name(kind).rsplit(".", 1)[1]


def schema_fragment(kind: str) -> dict:
    """The JSON-schema definition of a study entry of ``kind`` (its ``schema.yaml``)."""
    return yaml.safe_load((package_dir(kind) / "schema.yaml").read_text())


def rules_files() -> list[str]:
    """The rules files of every registered kind (relative to rules/), in registry order."""
    return [load(kind).RULES for kind in REGISTRY]


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
