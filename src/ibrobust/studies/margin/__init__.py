"""Study MARGIN (kind ``margin``): gradient descent maximizes the normalized margin of a
homogeneous net (Lyu & Li, ICLR 2020), and what that buys in robustness. One training job
per (dataset, model, seed) with the loss-based learning rate (checkpoints + per-epoch
history), one robustness job per run (every checkpoint), one KKT-residual job per run
(every checkpoint), and one job for the figures and the summary beside the paper's checkpoint
table. With ``training.flow`` each seed also trains a constant-step run (schedule
``constant``: full-batch GD at one small lr from the same initialisation, the gradient flow's
stand-in) under ``<run>/constant/``, with its own KKT job and no robustness job. It trains
through its own rules (``rules/margin.smk``), not the generic network rules (no ``parts``);
the datasets come from the generic dataset rule.

The study's code is this package: planning and checks (here), :mod:`.claims` (the catalog)
and :mod:`.measures` (what each claim computes from the tables),
:mod:`.experiment` (a run's data, net, training config and per-point robustness: the
torch jobs), :mod:`.tables` (its numbers from the outputs, beside the paper's) and
:mod:`.plots`. The math is shared: :mod:`ibrobust.analysis.margin` (margins, the loss in
log space), :mod:`~ibrobust.analysis.lipschitz` (the certificate),
:mod:`ibrobust.training.margin` (the loss-based learning rate), :mod:`ibrobust.training.flow`
(the constant-step arm)."""

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


CONSTANT = "constant"  # the constant-step run's directory under its seed's (and its schedule)


def run_dir(study: str, r: dict) -> str:
    return f"results/{study}/{r['dataset']}/{r['model']}/seed{r['seed']}"


def files(study: str, st: dict, tail: str) -> list[str]:
    return [f"{run_dir(study, r)}/{tail}" for r in runs(st)]


def has_flow(st: dict) -> bool:
    """Whether the study trains the constant-step arm (``training.flow`` set)."""
    return st["training"].get("flow") is not None


def flow_files(study: str, st: dict, tail: str) -> list[str]:
    """``tail`` of every constant-step run (none without ``training.flow``), in runs() order."""
    return files(study, st, f"{CONSTANT}/{tail}") if has_flow(st) else []


def figures_inputs(study: str, st: dict) -> dict[str, list[str]]:
    """What the study's figures-and-tables job reads: per loss-based run its history,
    checkpoints, training meta, KKT residuals and per-point distances; per constant-step run
    (``flow_*``, empty without ``training.flow``) the same but the points (no robustness job).
    All in :func:`runs` order."""
    tails = dict(history="history.csv", table="checkpoints.csv", meta="train.json", kkt="kkt.csv")
    out = {k: files(study, st, t) for k, t in tails.items()}
    out["points"] = files(study, st, "points.csv")
    out.update({f"flow_{k}": flow_files(study, st, t) for k, t in tails.items()})
    return out


def training(cfg: dict, st: dict, model: str) -> dict[str, Any]:
    """What a loss-based training job runs: the model entry, the supervision and the
    schedule (without ``flow``: the constant-step arm's settings are its own job's)."""
    tr = {k: v for k, v in st["training"].items() if k != "flow"}
    return dict(model=cfg["models"][model], supervision=st["supervision"], **tr)


def flow(cfg: dict, st: dict, model: str) -> dict[str, Any]:
    """What a constant-step training job runs: the model entry, the supervision, the flow's
    lr / epochs / log_every and, from the loss-based run's settings, its dtype and loss
    thresholds (so both runs of a seed start from the same net in the same dtype)."""
    if not has_flow(st):
        raise ValueError("training.flow: unset, so the study trains no constant-step run")
    tr = st["training"]
    return dict(model=cfg["models"][model], supervision=st["supervision"], **tr["flow"],
                dtype=tr["dtype"], checkpoint_log10_losses=list(tr["checkpoint_log10_losses"]))  # fmt: skip


def robustness(cfg: dict, st: dict) -> dict[str, Any]:
    return dict(supervision=st["supervision"], **st["robustness"])


def outputs(cfg: dict, name: str, default: bool) -> list[str]:
    extra = ["checkpoints", "attack_audit", "points"]  # CSVs of the figures job
    if has_flow(cfg["studies"][name]):
        extra.append("schedules")  # per seed, the two schedules' losses at the same epoch
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
    fl = tr.get("flow")
    if fl is not None and not (math.isfinite(float(fl["lr"])) and fl["lr"] > 0):
        raise ConfigError(
            f"config key {where}.training.flow.lr: the constant learning rate must be a finite "
            f"number > 0, got {fl['lr']!r}"
        )
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
