"""Study MARGIN (kind ``margin``): gradient descent maximizes the normalized margin of a
homogeneous net (Lyu & Li, ICLR 2020), and what that buys in robustness. One training job
per (dataset, model, seed) with the loss-based learning rate (checkpoints + per-epoch
history), one robustness job per run (every checkpoint), figures and a summary beside the
paper's checkpoint table. It trains through its own rules (``rules/margin.smk``), not the
generic network rules (no ``parts``); the datasets come from the generic dataset rule.

The study's code is this package: planning and checks (here), :mod:`.claims`,
:mod:`.experiment` (a run's data, net, training config and per-point robustness: the
torch jobs), :mod:`.tables` (its numbers from the outputs, beside the paper's) and
:mod:`.plots`. The math is shared: :mod:`ibrobust.analysis.margin` (margins, the loss in
log space), :mod:`~ibrobust.analysis.lipschitz` (the certificate),
:mod:`ibrobust.training.margin` (the loss-based learning rate)."""

from __future__ import annotations

import math
from typing import Any

from ibrobust.errors import ConfigError
from ibrobust.kinds import MODELS
from ibrobust.studies import figure_files
from ibrobust.studies.checks import check_datasets, check_registry_names

FIGURES = ["margins", "loss", "robust_accuracy", "distance_vs_margin"]


def task(supervision: str) -> str:
    return "fine" if supervision == "multiclass" else "binary"


def runs(st: dict) -> list[dict[str, Any]]:
    """One training job per (dataset, model, seed): wildcards as plain python values."""
    return [dict(dataset=d, model=m, seed=int(s))
            for d in st["datasets"] for m in st["models"] for s in st["seeds"]]  # fmt: skip


def run_dir(study: str, r: dict) -> str:
    return f"results/{study}/{r['dataset']}/{r['model']}/seed{r['seed']}"


def files(study: str, st: dict, tail: str) -> list[str]:
    return [f"{run_dir(study, r)}/{tail}" for r in runs(st)]


def figure_inputs(study: str, st: dict, figure: str) -> dict[str, list[str]]:
    """What one figure reads: the histories and checkpoint tables (margins, loss) or the
    per-point distances (robust_accuracy, distance_vs_margin), so the first two neither wait
    for nor rerun with the robustness jobs."""
    if figure in ("margins", "loss"):
        return dict(
            history=files(study, st, "history.csv"), table=files(study, st, "checkpoints.csv")
        )
    return dict(points=files(study, st, "points.csv"))


def training(cfg: dict, st: dict, model: str) -> dict[str, Any]:
    """What a training job runs: the model entry, the supervision and the schedule."""
    return dict(model=cfg["models"][model], supervision=st["supervision"], **st["training"])


def robustness(cfg: dict, st: dict) -> dict[str, Any]:
    return dict(supervision=st["supervision"], **st["robustness"])


def outputs(cfg: dict, name: str, default: bool) -> list[str]:
    extra = ("checkpoints", "attack_audit", "points")  # CSVs of the summary job
    return figure_files(name, FIGURES) + [f"results/{name}/figures/{t}.csv" for t in extra]


def check(cfg: dict, st: dict, where: str) -> None:
    check_registry_names(cfg, st, where, ("datasets", "models"))
    check_datasets(cfg, st, where, ("image", "flat"))
    for i, m in enumerate(st["models"]):
        check_homogeneous(cfg["models"][m], f"{where}.models[{i}]", m)
    tr = st["training"]
    alpha = tr["alpha"]
    if not (isinstance(alpha, int | float) and math.isfinite(alpha) and alpha > 0):
        raise ConfigError(
            f"config key {where}.training.alpha: alpha(0) of the loss-based learning rate "
            f"must be a finite number > 0, got {alpha!r}"
        )
    th = [float(t) for t in tr["checkpoint_log10_losses"]]
    if not all(math.isfinite(t) for t in th) or any(
        b >= a for a, b in zip(th, th[1:], strict=False)
    ):
        raise ConfigError(
            f"config key {where}.training.checkpoint_log10_losses: must be finite and strictly "
            f"decreasing (each checkpoint at a lower train loss than the one before), got {th}"
        )
    stop = tr["stop_log10_loss"]
    if stop is not None and not math.isfinite(float(stop)):
        raise ConfigError(f"config key {where}.training.stop_log10_loss: not finite ({stop!r})")
    rob = st["robustness"]
    if rob["bisection_points"] > rob["attack_points"]:
        raise ConfigError(
            f"config key {where}.robustness.bisection_points: {rob['bisection_points']} exceeds "
            f"attack_points {rob['attack_points']} (the cross-check sample is a subset of them)"
        )
    for norm, grid in rob["radii"].items():
        if not all(math.isfinite(float(r)) for r in grid):
            raise ConfigError(f"config key {where}.robustness.radii.{norm}: not finite: {grid}")


def check_homogeneous(model: dict, where: str, name: str) -> None:
    """Refuse a model the margin metrics cannot read: q_min / rho^L needs f(c theta) =
    c^L f(theta) (its kind's ``homogeneity_degree``), which a bias after the first layer
    (or an input normalisation) breaks; and a model the study can train (not constructed)."""
    kind, caps = model["kind"], MODELS.of(model)
    ok = [k for k in MODELS.kinds() if _trainable_homogeneous(MODELS.capabilities(k))]
    if not _trainable_homogeneous(caps):
        why = (
            "is built from the data, not trained"
            if caps["constructed"]
            else "is not homogeneous in its parameters (biases beyond the first layer or a "
            "normalisation break f(c theta) = c^L f(theta)), so the margin metrics "
            "q_min / rho^L do not apply"
        )
        raise ConfigError(
            f"config key {where}: model {name!r} of kind {kind!r} {why}; use one of the kinds {ok}"
        )


def _trainable_homogeneous(caps: dict) -> bool:
    return caps["homogeneity_degree"] is not None and not caps["constructed"]
