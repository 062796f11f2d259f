"""Study FA-IMAGES (kind ``feature_averaging_images``): Li et al. Fig. 2/3 on real images,
2-class vs k-class supervision, robust accuracy on a radius grid per dataset and a summary
at the paper's report radii. One part, the study itself (its radii by dataset); a k-class
model is judged by its binary readout (the defaults of ``parts`` and ``task``). Rules:
``rules/fa_images.smk`` (+ the generic network rules).

The study's code is this package: planning and checks (here), :mod:`.claims`,
:mod:`.tables` (the summary beside the paper's numbers) and :mod:`.plots`; the cosine
heatmaps are the shared :mod:`ibrobust.plotting.cosines`."""

from __future__ import annotations

from ibrobust.errors import ConfigError
from ibrobust.studies import figure_files
from ibrobust.studies.checks import (
    check_attacks,
    check_datasets,
    check_optimizers,
    check_registry_names,
    check_trained_models,
)

FIGURES = ["cosine_heatmaps", "robust_accuracy_vs_radius"]


def outputs(cfg: dict, name: str, default: bool) -> list[str]:
    return figure_files(name, FIGURES)


def check(cfg: dict, st: dict, where: str) -> None:
    check_registry_names(cfg, st, where, ("datasets", "models", "optimizers", "attacks"))
    check_datasets(cfg, st, where, ("image",))
    check_trained_models(cfg, st, where, st["datasets"])
    check_optimizers(cfg, st, where, "network")
    check_attacks(cfg, st, where, st["datasets"])
    for key in ("radii", "report_radii", "paper_tasks"):
        for dn in st[key]:
            if dn not in st["datasets"]:
                raise ConfigError(
                    f"config key {where}.{key}.{dn}: not one of the study's datasets {st['datasets']}"
                )
    for dn in st["datasets"]:
        if dn not in st["radii"]:
            raise ConfigError(f"config key {where}.radii: no radius grid for dataset {dn!r}")
        grid = {float(r) for r in st["radii"][dn]}
        for j, r in enumerate(st["report_radii"].get(dn, [])):
            if float(r) not in grid:
                raise ConfigError(
                    f"config key {where}.report_radii.{dn}[{j}]: {r} is not on the radius grid "
                    f"{st['radii'][dn]}"
                )
