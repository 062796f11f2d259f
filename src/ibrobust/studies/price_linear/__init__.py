"""Study PRICE-LIN (kind ``price_linear``): robust ERM with steepest descent on linear models
and GD on diagonal nets (Tsilivis et al., NeurIPS 2024, Sec. 5.1): regimes (teacher
datasets) x n, one job per (regime, n) drawing its training sets, their exact margins and
every algorithm's robust ERM over every draw x eps fraction. It trains through its own
rules (``rules/price_linear.smk``), not the generic network rules (no ``parts``): datasets
of layout ``draws`` (the study draws each n's training sets) and optimizers of linear
models.

The study's code is this package: planning and checks (here), :mod:`.claims`,
:mod:`.algorithms` (which robust-ERM algorithm an optimizer runs, labels, metric names;
torch-free), :mod:`.experiment` (one job's problems, training and metrics), :mod:`.tables`
(across jobs: cosines, gap differences, the summary) and :mod:`.plots`. The math is shared:
:mod:`ibrobust.data.teacher` (the draws), :mod:`ibrobust.training.robust_erm`,
:mod:`ibrobust.analysis.linear_margin` (exact margins, LP) and
:mod:`~ibrobust.analysis.linear_metrics` (closed-form robust metrics of linear models)."""

from __future__ import annotations

from typing import Any

from ibrobust.errors import ConfigError
from ibrobust.kinds import OPTIMIZERS
from ibrobust.studies import figure_files
from ibrobust.studies.checks import check_datasets, check_optimizers, check_registry_names

FIGURES = ["gap_vs_n", "gap_difference_robust", "gap_difference_clean", "solution_cosines"]


def runs(st: dict) -> list[dict[str, Any]]:
    """One training job per (dataset, n): wildcards as plain python values."""
    return [dict(dataset=ds, n=int(n)) for ds in st["datasets"] for n in st["n_train"]]


def files(study: str, st: dict, tail: str) -> list[str]:
    return [f"results/{study}/{r['dataset']}/n{r['n']}/{tail}" for r in runs(st)]


def data(cfg: dict, st: dict, dataset: str) -> dict[str, Any]:
    """What a data job draws: the dataset entry, the draws and the seed."""
    return dict(
        dataset=cfg["datasets"][dataset], seed=int(st["seed"]), draws=[int(r) for r in st["draws"]]
    )


def training(cfg: dict, st: dict) -> dict[str, Any]:
    """What a training job runs: every algorithm of the study (name -> entry), the shared
    stopping rule, the eps grid."""
    stop = st["stopping"]
    return dict(
        optimizers={o: cfg["optimizers"][o] for o in st["optimizers"]},
        stopping=dict(
            loss_threshold=float(stop["loss_threshold"]), max_iters=int(stop["max_iters"])
        ),
        eps_fractions=[float(f) for f in st["eps_fractions"]],
    )


def optimizer_modules(cfg: dict, st: dict) -> list[str]:
    """The modules of the study's optimizer kinds: their algorithms and labels are what the
    training, figure and table jobs load (the rules add them to their code hashes)."""
    return sorted({OPTIMIZERS.module_name(cfg["optimizers"][o]["kind"]) for o in st["optimizers"]})


def registry(cfg: dict, st: dict) -> dict[str, Any]:
    """The study's dataset and optimizer entries (figure labels) and its GD - CD pair."""
    return dict(
        datasets={d: cfg["datasets"][d] for d in st["datasets"]},
        optimizers={o: cfg["optimizers"][o] for o in st["optimizers"]},
        gap_difference=list(st["gap_difference"]),
    )


def outputs(cfg: dict, name: str, default: bool) -> list[str]:
    # + every run's margin ratio at each decade of its train loss (the limit claims' trend)
    return figure_files(name, FIGURES) + [f"results/{name}/figures/margin_path.csv"]


def check(cfg: dict, st: dict, where: str) -> None:
    check_registry_names(cfg, st, where, ("datasets", "optimizers"))
    check_datasets(cfg, st, where, ("draws",))
    check_optimizers(cfg, st, where, "linear")
    if not any(float(f) == 0.0 for f in st["eps_fractions"]):
        raise ConfigError(
            f"config key {where}.eps_fractions: must contain 0 (plain ERM, the baseline "
            f"of every figure), got {st['eps_fractions']}"
        )
    if len({float(f) for f in st["eps_fractions"]}) != len(st["eps_fractions"]):
        raise ConfigError(
            f"config key {where}.eps_fractions: duplicate values {st['eps_fractions']}"
        )
    for i, name in enumerate(st["gap_difference"]):
        if name not in st["optimizers"]:
            raise ConfigError(
                f"config key {where}.gap_difference[{i}]: {name!r} is not one of the "
                f"study's optimizers {st['optimizers']}"
            )
