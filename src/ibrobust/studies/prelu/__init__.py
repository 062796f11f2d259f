"""Study PRELU (kind ``prelu``): implicit bias of pReLU networks (Min & Vidal, ICML 2024) in
two halves, each a cross product of its own: ``synthetic`` (orthogonal clusters at noise
levels alpha: datasets ``<base>@alpha=<value>``; robust accuracy, neuron alignment, distances
to the ideal classifiers) and ``mnist`` (Table 1, radii by norm). The default target builds
the synthetic half only (the MNIST half needs the dataset). Rules: ``rules/prelu.smk``.

The study's code is this package: planning and checks (here), :mod:`.claims`,
:mod:`.experiment` (the synthetic half's per-run analysis job: alignment and distances of
a trained net), :mod:`.tables` (the summary over runs and Table 1 beside the paper's and
the official models' numbers), :mod:`.plots` and :mod:`.radii` (the theorems' reference
radii, torch-free). The rest is shared: :mod:`ibrobust.models.prelu` (the model kind),
:mod:`ibrobust.training.prelu` (its trainer) and :mod:`ibrobust.analysis.prelu` (ideal
classifiers, scale-invariant distance, neuron alignment)."""

from __future__ import annotations

from typing import Any

from ibrobust.errors import ConfigError
from ibrobust.kinds import DATASETS, MODELS
from ibrobust.studies import figure_files, plan
from ibrobust.studies.checks import (
    check_attacks,
    check_dataset,
    check_datasets,
    check_optimizer_losses,
    check_optimizers,
    check_part_attacks,
    check_registry_names,
    check_trained_models,
)
from ibrobust.studies.expansion import derived_datasets, sweep_dataset

# what the synthetic half's analysis reads of its data (alignment with the cluster means)
SYNTHETIC_DATA = frozenset({"cluster_means"})
HALVES = ("synthetic", "mnist")
FIGURES = {
    "synthetic": ["robust_accuracy_vs_radius", "neuron_alignment", "ideal_distances"],
    "mnist": ["mnist_robust_accuracy"],
}
TABLES = {"synthetic": ("summary",), "mnist": ("table1",)}


def task(supervision: str) -> str:
    """Each model is judged on the labels it was trained on (2-class: binary; k-class: the
    fine classes, as the paper's Table 1)."""
    return "fine" if supervision == "multiclass" else "binary"


def sweeps(st: dict) -> list[tuple[str, str, list]]:
    syn = st.get("synthetic")
    return [] if syn is None else [(syn["dataset"], "alpha", list(syn["alphas"]))]


def parts(cfg: dict, st: dict) -> list[dict[str, Any]]:
    """One part per half ("synthetic": its alpha datasets; "mnist"), datasets disjoint."""
    out = []
    if st["synthetic"] is not None:
        syn = st["synthetic"]
        dss = [sweep_dataset(cfg, syn["dataset"], "alpha", a) for a in syn["alphas"]]
        out.append(dict(syn, datasets=dss, part="synthetic"))
    if st["mnist"] is not None:
        out.append(dict(st["mnist"], part="mnist"))
    return out


def runs(cfg: dict, study: str, half: str) -> list[dict[str, Any]]:
    """The runs of one half of a prelu study."""
    return plan.as_dicts(plan.trained_runs(cfg, study, parts=[half]))


def refined_runs(cfg: dict, study: str) -> list[dict[str, Any]]:
    """The synthetic runs whose critical radius is refined by bisection (``refine``): those
    of its models at the figure alpha (the claims' noise level)."""
    syn = cfg["studies"][study]["synthetic"]
    if syn is None or syn.get("refine") is None:
        return []
    fa = labels(cfg, study, "synthetic")
    at = {d for d, a in fa["alphas"].items() if abs(a - fa["figure_alpha"]) < 1e-12}
    ps = {float(v) for v in syn["refine"]["p"]}
    return [
        r
        for r in runs(cfg, study, "synthetic")
        if r["dataset"] in at and float(MODELS.setting(cfg["models"][r["model"]], "p")) in ps
    ]


def dataset_alpha(ds: dict) -> float:
    """alpha of a clusters dataset (its noise std times sqrt(d) when alpha is not set)."""
    return (
        float(ds["alpha"]) if ds.get("alpha") is not None else float(ds["sigma"]) * ds["d"] ** 0.5
    )


def labels(cfg: dict, study: str, half: str) -> dict[str, Any]:
    """What the figure and table scripts label runs by: alpha per dataset (synthetic), the
    model entries (p, kind) and the number of clusters K."""
    part = plan.study_parts(cfg, study, [half])[0]
    out: dict[str, Any] = dict(models={m: cfg["models"][m] for m in part["models"]})
    if half == "synthetic":
        datasets = {**cfg["datasets"], **derived_datasets(cfg)}
        alphas = sorted(float(a) for a in part["alphas"])
        fa = part["figure_alpha"]
        base = datasets[part["dataset"]]
        positive = base["positive"] if base["positive"] is not None else range(base["k"] // 2)
        out.update(
            alphas={d: dataset_alpha(datasets[d]) for d in part["datasets"]},
            k=int(base["k"]),
            signs=[1.0 if j in set(positive) else -1.0 for j in range(base["k"])],
            figure_alpha=float(fa) if fa is not None else alphas[(len(alphas) - 1) // 2],
        )
    return out


def model_modules(cfg: dict, study: str, half: str) -> list[str]:
    """The model-kind modules of one half's models (what its analysis job can run)."""
    return sorted(
        {
            MODELS.module_name(cfg["models"][m]["kind"])
            for p in plan.study_parts(cfg, study, [half])
            for m in p["models"]
        }
    )


def analysis_params(st: dict) -> dict[str, Any]:
    syn = st["synthetic"]
    return dict(probes=int(syn["probes"]), active_rel=float(syn["active_rel"]))


def outputs(cfg: dict, name: str, default: bool) -> list[str]:
    """The synthetic half's figures and summary, and (not in the default target) the MNIST
    half's figure and Table 1."""
    st = cfg["studies"][name]
    halves = ("synthetic",) if default else HALVES
    return [
        f for h in halves if st[h] is not None for f in figure_files(name, FIGURES[h], TABLES[h])
    ]


def check(cfg: dict, st: dict, where: str) -> None:
    if all(st.get(h) is None for h in HALVES):
        raise ConfigError(
            f"config key {where}: a prelu study needs a synthetic or an mnist half (both are null)"
        )
    # each half as a study of its own for the shared checks (their messages name the kind)
    syn = None if st.get("synthetic") is None else {**st["synthetic"], "kind": st["kind"]}
    mn = None if st.get("mnist") is None else {**st["mnist"], "kind": st["kind"]}
    if syn is not None:
        _check_synthetic(cfg, syn, f"{where}.synthetic")
    if mn is not None:
        w = f"{where}.mnist"
        check_registry_names(cfg, mn, w, ("datasets", "models", "optimizers", "attacks"))
        check_datasets(cfg, mn, w, ("image",))
        check_trained_models(cfg, mn, w, mn["datasets"])
        check_optimizers(cfg, mn, w, "network")
        check_attacks(cfg, mn, w, mn["datasets"], binary_task="binary" in mn["supervisions"])
        check_optimizer_losses(cfg, mn, w)
        check_part_attacks(cfg, mn, w, task)
        if syn is not None and syn["dataset"] in mn["datasets"]:  # kinds differ; say it plainly
            raise ConfigError(
                f"config key {w}.datasets: the two halves' datasets must be disjoint "
                f"({syn['dataset']!r} is in both)"
            )


def _check_synthetic(cfg: dict, syn: dict, w: str) -> None:
    base = syn["dataset"]
    if base not in cfg["datasets"]:
        raise ConfigError(f"config key {w}.dataset: {base!r} is not defined under datasets")
    check_dataset(cfg, base, f"{w}.dataset", syn["kind"], ("flat",), SYNTHETIC_DATA)
    check_registry_names(cfg, syn, w, ("models", "optimizers", "attacks"))
    for i, m in enumerate(syn["models"]):
        if not MODELS.of(cfg["models"][m])["alignment"]:
            ok = [k for k in MODELS.kinds() if MODELS.capability(k, "alignment")]
            raise ConfigError(
                f"config key {w}.models[{i}]: {m!r} is of kind {cfg['models'][m]['kind']!r}; "
                f"the synthetic half trains models its alignment analysis reads (p and the "
                f"pReLU weights: kinds {ok}); train other models on clusters in a "
                "feature_averaging study"
            )
    check_trained_models(cfg, syn, w, [base])
    check_optimizers(cfg, syn, w, "network")
    check_attacks(cfg, syn, w, [base])
    for i, a in enumerate(syn["alphas"]):
        variant = dict(cfg["datasets"][base], alpha=float(a))
        DATASETS.check_entry(variant, f"{w}.alphas[{i}]")
    fa = syn.get("figure_alpha")
    if fa is not None and all(float(fa) != float(a) for a in syn["alphas"]):
        raise ConfigError(f"config key {w}.figure_alpha: {fa} is not one of alphas {syn['alphas']}")
    ps = {float(MODELS.setting(cfg["models"][m], "p")) for m in syn["models"]}
    for i, v in enumerate((syn.get("refine") or {}).get("p", [])):
        if float(v) not in ps:
            raise ConfigError(
                f"config key {w}.refine.p[{i}]: no model of {w}.models has p = {v:g} "
                f"(theirs: {sorted(ps)})"
            )
    check_optimizer_losses(cfg, syn, w)
    check_part_attacks(cfg, syn, w, task)
