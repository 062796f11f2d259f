"""Study PRICE-NN (kind ``price_nn``): GD vs sign descent on networks under ERM and robust
ERM (Tsilivis et al., NeurIPS 2024, Sec. 5.2). Two halves, each a cross product of its own
on the generic network rules (dataset, train, attack):

* ``fc``: the one-hidden-layer net without biases (e.g. model kind ``fc``) on MNIST 2 vs 7,
  binary supervision, exponential loss, a fixed number of steps;
* ``cnn``: the Madry CNN (e.g. model kind ``cnn``) on 10-class MNIST subsets, multiclass
  supervision (cross-entropy on the fine labels; the published caption of Fig. 3: "all
  classes"), stopped at the first epoch whose train loss is below the optimizer's
  ``stop_loss`` with the perturbed batch classified without error (the paper's reporting
  time; the epoch is recorded).

Each half trains any image model under full-batch steepest descent (optimizer kinds with
``full_batch``, e.g. ``gd``; its ``norm`` names the algorithm: l2 GD, linf sign descent).
A half's ``supervision`` says what its models learn and what counts as correct (binary: the
binary readout; multiclass: the fine classes, top-1).

Grids, derived like Study FA's scaling sweep: the training-set sizes ``n_train`` give the
datasets ``<dataset>@n_train=<n>``; the training radii ``eps`` give the optimizer variants
``<optimizer>@eps=<value>`` (the base entry with ``adversarial.eps`` set: robust ERM by the
generic trainer; eps 0 = plain ERM). A half's ``hard_cells`` names the radii of the hardest
cells and the optimizers trained there instead (the same entries but for a larger
``stop_loss``: paper App. F.2). Deriving optimizers (not a study dimension of its own)
keeps the run directory, the train rule and its code hash those of every network study:
robust ERM stays an optimizer setting any study can name. The final evaluation is the
generic attack rule with the half's attack set (training PGD, strong PGD, APGD-CE; the
per-point worst case), each run at its own training eps only (the part's ``run_radii``).
Rules: ``rules/price_nn.smk``. The default target leaves the study out (it needs MNIST).

The study's code is this package: planning and checks (here), :mod:`.claims`, :mod:`.rows`
(the runs' outputs as history and final rows), :mod:`.tables` (paired GD - SD differences,
per cell and per seed, the summary beside the paper's number) and :mod:`.plots`.
"""

from __future__ import annotations

from typing import Any

from ibrobust.attacks.policy import attack_applies
from ibrobust.errors import ConfigError
from ibrobust.optimizers.adversarial import check_adversarial
from ibrobust.studies import figure_files, plan
from ibrobust.studies.checks import (
    check_attacks,
    check_dataset,
    check_optimizer_losses,
    check_optimizers,
    check_part_attacks,
    check_registry_names,
    check_trained_models,
)
from ibrobust.studies.expansion import sweep_dataset, variant_name

HALVES = ("fc", "cnn")
FIGURES = ["accuracy_curves", "cnn_heatmap"]
TABLES = ("fc_table", "summary", "cells")


def supervision(half: dict) -> str:
    """binary (the fc half's default) or multiclass (the fine classes)."""
    return half.get("supervision") or "binary"


def task(sup: str) -> str:
    """What counts as correct: the binary readout for a 2-class model, the fine class (top-1)
    for a k-class one."""
    return "fine" if sup == "multiclass" else "binary"


def hard_eps(half: dict) -> set[float]:
    """The radii of the half's hardest cells (trained with ``hard_cells.optimizers``)."""
    hard = half.get("hard_cells") or {}
    return {float(e) for e in hard.get("eps") or ()}


def trained(half: dict) -> list[tuple[str, float]]:
    """(base optimizer, eps) of every run of a half: each of ``optimizers`` at every eps
    outside ``hard_cells.eps``, each of ``hard_cells.optimizers`` at the eps inside."""
    hard = half.get("hard_cells") or {}
    out = []
    for e in half["eps"]:
        bases = hard["optimizers"] if float(e) in hard_eps(half) else half["optimizers"]
        out += [(o, float(e)) for o in bases]
    return out


def sweeps(st: dict) -> list[tuple[str, str, list]]:
    return [(st[h]["dataset"], "n_train", list(st[h]["n_train"])) for h in HALVES if st[h]]


def optimizer_sweeps(st: dict) -> list[tuple[str, str, list]]:
    out: dict[str, list] = {}
    for h in HALVES:
        if st[h]:
            for o, e in trained(st[h]):
                out.setdefault(o, []).append(e)
    return [(o, "eps", eps) for o, eps in out.items()]


def algorithm(opt: dict) -> str:
    """gd (l2 steepest descent) or sd (l_inf: sign descent) of an optimizers entry."""
    return "sd" if opt.get("norm") == "linf" else "gd"


def radii(st: dict) -> list[float]:
    """Every training eps of the study (the checks' radius grid)."""
    return sorted({float(e) for h in HALVES if st.get(h) for e in st[h]["eps"]})


def run_radii(half: dict) -> dict[str, list[float]]:
    """Optimizer variant -> the radii its runs are attacked at: 0 and its own training eps
    (a run is read at its training eps only; the rest of the grid would triple the attack
    cost of a 3-eps half)."""
    return {variant_name(o, "eps", e): sorted({0.0, e}) for o, e in trained(half)}


def parts(cfg: dict, st: dict) -> list[dict[str, Any]]:
    out = []
    for h in HALVES:
        if st[h] is None:
            continue
        half = st[h]
        out.append(
            dict(
                half,
                part=h,
                datasets=[
                    sweep_dataset(cfg, half["dataset"], "n_train", n) for n in half["n_train"]
                ],
                optimizers=[variant_name(o, "eps", e) for o, e in trained(half)],
                supervisions=[supervision(half)],
                radii=radii(st),
                run_radii=run_radii(half),
            )
        )
    return out


def runs(cfg: dict, study: str, half: str) -> list[dict[str, Any]]:
    """The runs of one half, each with its labels: arch, algorithm, eps, n."""
    st = cfg["studies"][study]
    if st[half] is None:
        return []
    h = st[half]
    n_of = {sweep_dataset(cfg, h["dataset"], "n_train", n): int(n) for n in h["n_train"]}
    label = {variant_name(o, "eps", e): (algorithm(cfg["optimizers"][o]), e) for o, e in trained(h)}
    out = []
    for r in plan.as_dicts(plan.trained_runs(cfg, study, parts=[half])):
        alg, eps = label[r["optimizer"]]
        out.append(dict(r, arch=half, algorithm=alg, eps=eps, n=n_of[r["dataset"]]))
    return out


def all_runs(cfg: dict, study: str) -> list[dict[str, Any]]:
    """The runs of both halves, labelled (what the figures job reads)."""
    return [r for h in HALVES for r in runs(cfg, study, h)]


def run_files(cfg: dict, study: str, tail: str) -> list[str]:
    """``tail`` of every run's directory (fc and cnn)."""
    keys = [{k: r[k] for k in plan.RUN_KEYS} for r in all_runs(cfg, study)]
    return plan.files(study, keys, tail)


def curve_n(st: dict) -> int:
    """The training-set size of the FC curves: the smallest n of the fc half (0: no fc half)."""
    return min(st["fc"]["n_train"]) if st.get("fc") else 0


def outputs(cfg: dict, name: str, default: bool) -> list[str]:
    return figure_files(name, FIGURES, TABLES)


def check(cfg: dict, st: dict, where: str) -> None:
    if all(st.get(h) is None for h in HALVES):
        raise ConfigError(f"config key {where}: a price_nn study needs an fc or a cnn half")
    for h in HALVES:
        if st.get(h) is not None:
            half = {**st[h], "kind": st["kind"], "supervisions": [supervision(st[h])]}
            _check_half(cfg, half, f"{where}.{h}")  # names first: hard cells read them
            _check_hard_cells(cfg, half, f"{where}.{h}")


def _check_hard_cells(cfg: dict, half: dict, w: str) -> None:
    """hard_cells: per base optimizer, its partner that differs in stop_loss only (the
    paper's larger threshold for the hardest cells, nothing else). Its radii outside the
    half's eps grid are unused (an overlay may drop them from the grid)."""
    hard = half.get("hard_cells")
    if not hard:
        return
    if len(hard["optimizers"]) != len(half["optimizers"]):
        raise ConfigError(
            f"config key {w}.hard_cells.optimizers: one per entry of {w}.optimizers "
            f"({len(half['optimizers'])}), got {len(hard['optimizers'])}"
        )
    for j, (o, base) in enumerate(zip(hard["optimizers"], half["optimizers"], strict=True)):
        if o not in cfg["optimizers"]:
            raise ConfigError(
                f"config key {w}.hard_cells.optimizers[{j}]: {o!r} is not defined under optimizers"
            )
        a, b = cfg["optimizers"][o], cfg["optimizers"][base]
        diff = sorted(k for k in set(a) | set(b) if k != "stop_loss" and a.get(k) != b.get(k))
        if diff:
            raise ConfigError(
                f"config key {w}.hard_cells.optimizers[{j}]: {o!r} differs from {base!r} in "
                f"{diff}; a hard cell's optimizer may differ in stop_loss only"
            )


def _check_half(cfg: dict, half: dict, w: str) -> None:
    base = half["dataset"]
    if base not in cfg["datasets"]:
        raise ConfigError(f"config key {w}.dataset: {base!r} is not defined under datasets")
    check_dataset(cfg, base, f"{w}.dataset", half["kind"], ("image",))
    check_registry_names(cfg, half, w, ("models", "optimizers", "attacks"))
    check_trained_models(cfg, half, w, [base])
    # GD vs sign descent: full-batch steepest descent (its norm names the algorithm)
    check_optimizers(cfg, half, w, "network", full_batch=True)
    check_optimizer_losses(cfg, half, w)
    check_attacks(cfg, half, w, [base])
    sup = half["supervisions"][0]
    for i, a in enumerate(half["attacks"]):  # a silently dropped attack would weaken the worst case
        if not attack_applies(cfg["attacks"][a], sup, task(sup)):
            raise ConfigError(
                f"config key {w}.attacks[{i}]: {a!r} does not apply to {sup} models (task "
                f"{task(sup)!r}: the fine task takes ce / fine_margin losses and autoattack)"
            )
    for o, e in dict.fromkeys(trained(half)):  # each variant's robust-ERM block, by its eps key
        adv = cfg["optimizers"][o].get("adversarial") or {}
        try:
            check_adversarial({**adv, "eps": e}, f"optimizers.{o}.adversarial")
        except ConfigError as err:
            j = [float(v) for v in half["eps"]].index(e)
            raise ConfigError(f"config key {w}.eps[{j}]: {err}") from None
        if adv.get("norm", "linf") != "linf":
            raise ConfigError(
                f"config key optimizers.{o}.adversarial.norm: {w} trains against l_inf PGD"
            )
    if not half["eps"]:  # a scale ladder's overrides reach here without the schema's minItems
        raise ConfigError(f"config key {w}.eps: empty; the half trains at one eps at least")
    part = {**half, "radii": sorted({float(e) for e in half["eps"]})}
    if len(part["radii"]) < 2:
        part["radii"] = [0.0, *part["radii"]] if part["radii"][0] else part["radii"]
    check_part_attacks(cfg, part, w, task)
