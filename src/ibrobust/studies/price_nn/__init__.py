"""Study PRICE-NN (kind ``price_nn``): GD vs sign descent on networks under ERM and robust
ERM (Tsilivis et al., NeurIPS 2024, Sec. 5.2). Two halves, each a cross product of its own
on the generic network rules (dataset, train, attack):

* ``fc``: the one-hidden-layer net without biases (e.g. model kind ``fc``), exponential loss;
* ``cnn``: the Madry CNN (e.g. model kind ``cnn``), cross-entropy, stopped at the first epoch
  whose train loss is below the optimizer's ``stop_loss`` (the epoch is recorded).

Each half trains any image model under full-batch steepest descent (optimizer kinds with
``full_batch``, e.g. ``gd``; its ``norm`` names the algorithm: l2 GD, linf sign descent).

Grids, derived like Study FA's scaling sweep: the training-set sizes ``n_train`` give the
datasets ``<dataset>@n_train=<n>``; the training radii ``eps`` give the optimizer variants
``<optimizer>@eps=<value>`` (the base entry with ``adversarial.eps`` set: robust ERM by the
generic trainer; eps 0 = plain ERM). Deriving optimizers (not a study dimension of its own)
keeps the run directory, the train rule and its code hash those of every network study:
robust ERM stays an optimizer setting any study can name. The final evaluation is the
generic attack rule at every training radius with the half's attack set (training PGD,
strong PGD, APGD-CE; worst case); each run is read at its own training eps. Rules:
``rules/price_nn.smk``. The default target leaves the study out (it needs MNIST).

The study's code is this package: planning and checks (here), :mod:`.claims`, :mod:`.rows`
(the runs' outputs as history and final rows), :mod:`.tables` (paired GD - SD differences,
the summary beside the paper's number) and :mod:`.plots`.
"""

from __future__ import annotations

from typing import Any

from ibrobust.errors import ConfigError
from ibrobust.optimizers.adversarial import check_adversarial
from ibrobust.studies import figure_files, hook, plan
from ibrobust.studies.checks import (
    check_attacks,
    check_dataset,
    check_optimizers,
    check_part_attacks,
    check_registry_names,
    check_trained_models,
)
from ibrobust.studies.expansion import sweep_dataset, variant_name

HALVES = ("fc", "cnn")
FIGURES = ["accuracy_curves", "cnn_heatmap"]
TABLES = ("fc_table", "summary")


def sweeps(st: dict) -> list[tuple[str, str, list]]:
    return [(st[h]["dataset"], "n_train", list(st[h]["n_train"])) for h in HALVES if st[h]]


def optimizer_sweeps(st: dict) -> list[tuple[str, str, list]]:
    return [(o, "eps", list(st[h]["eps"])) for h in HALVES if st[h] for o in st[h]["optimizers"]]


def algorithm(opt: dict) -> str:
    """gd (l2 steepest descent) or sd (l_inf: sign descent) of an optimizers entry."""
    return "sd" if opt.get("norm") == "linf" else "gd"


def radii(st: dict) -> list[float]:
    """The final evaluation's radii: every training eps of the study (the halves may share a
    dataset, and an attack job's radii are those of its dataset)."""
    return sorted({float(e) for h in HALVES if st.get(h) for e in st[h]["eps"]})


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
                optimizers=[
                    variant_name(o, "eps", e) for o in half["optimizers"] for e in half["eps"]
                ],
                supervisions=["binary"],
                radii=radii(st),
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
    label = {
        variant_name(o, "eps", e): (algorithm(cfg["optimizers"][o]), float(e))
        for o in h["optimizers"]
        for e in h["eps"]
    }
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
            _check_half(
                cfg, {**st[h], "kind": st["kind"], "supervisions": ["binary"]}, f"{where}.{h}", h
            )


def _check_half(cfg: dict, half: dict, w: str, h: str) -> None:
    base = half["dataset"]
    if base not in cfg["datasets"]:
        raise ConfigError(f"config key {w}.dataset: {base!r} is not defined under datasets")
    check_dataset(cfg, base, f"{w}.dataset", half["kind"], ("image",))
    check_registry_names(cfg, half, w, ("models", "optimizers", "attacks"))
    check_trained_models(cfg, half, w, [base])
    # GD vs sign descent: full-batch steepest descent (its norm names the algorithm)
    check_optimizers(cfg, half, w, "network", full_batch=True)
    check_attacks(cfg, half, w, [base])
    for o in half["optimizers"]:
        adv = cfg["optimizers"][o].get("adversarial") or {}
        for j, e in enumerate(half["eps"]):  # each variant's robust-ERM block, by its eps key
            try:
                check_adversarial({**adv, "eps": float(e)}, f"optimizers.{o}.adversarial")
            except ConfigError as err:
                raise ConfigError(f"config key {w}.eps[{j}]: {err}") from None
        if adv.get("norm", "linf") != "linf":
            raise ConfigError(
                f"config key optimizers.{o}.adversarial.norm: {w} trains against l_inf PGD"
            )
    part = {**half, "radii": sorted({float(e) for e in half["eps"]})}
    if len(part["radii"]) < 2:
        part["radii"] = [0.0, *part["radii"]] if part["radii"][0] else part["radii"]
    check_part_attacks(cfg, part, w, hook(half["kind"], "task"))
