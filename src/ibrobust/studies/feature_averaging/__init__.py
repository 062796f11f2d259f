"""Study FA (kind ``feature_averaging``): binary vs k-class training on orthogonal clusters
(Li et al., ICLR 2025): cosine heatmaps, lambda decomposition of two-layer nets, robust
accuracy vs radius against a robust reference (each binary readout of the k-class nets,
``readouts``), margin vs input gradient per test point, and the critical-radius sweeps over
dataset keys (``scaling.sweeps``: the datasets ``<base>@<key>=<value>``, attack grid
``scaling``).
Rules: ``rules/fa.smk`` (+ the generic network rules)."""

from __future__ import annotations

from typing import Any

from ibrobust.config import (
    ConfigError,
    _check_clusters,
    _typed,
    sweep_dataset,
)
from ibrobust.studies import figure_files, plan
from ibrobust.studies.checks import (
    CLUSTER_DATA,
    FLAT_MODELS,
    NETWORK_OPTIMIZERS,
    check_attacks,
    check_kinds,
    check_registry_names,
    check_trained_models,
)

RULES = "fa.smk"
NETWORK = True
claims: tuple = ()  # claim declarations (ibrobust.claims) join here


def task(supervision: str) -> str:
    """A k-class model is judged by its binary readout: always the binary task."""
    return "binary"


def decomposed(cfg: dict, st: dict) -> bool:
    """Whether the study trains two-layer nets (their lambda decomposition applies)."""
    return any(cfg["models"][m]["kind"] == "two_layer" for m in st["models"])


def sweeps(st: dict) -> list[tuple[str, str, list]]:
    sc = st.get("scaling")
    return [] if sc is None else [(sc["dataset"], k, list(v)) for k, v in sc["sweeps"].items()]


def sweep_datasets(cfg: dict, st: dict) -> dict[str, list[str]]:
    """Swept key -> the dataset of each of its values (the base dataset where it has it)."""
    return {
        key: [sweep_dataset(cfg, base, key, v) for v in values] for base, key, values in sweeps(st)
    }


def parts(cfg: dict, st: dict) -> list[dict[str, Any]]:
    """The study itself ("main") and, with ``scaling``, the sweep (attack grid "scaling":
    radii as fractions of sqrt(d) of each swept dataset)."""
    out = [dict(st, part="main")]
    sc = st.get("scaling")
    if sc is not None:
        base = cfg["datasets"][sc["dataset"]]
        dss, radii = [], {}
        for _, key, values in sweeps(st):
            for v in values:
                name = sweep_dataset(cfg, sc["dataset"], key, v)
                d = dict(base, **{key: _typed(key, v)})["d"]
                if name not in radii:
                    dss.append(name)
                    radii[name] = [round(float(f) * d**0.5, 6) for f in sc["radius_fractions"]]
        seeds = sc["seeds"] or st["seeds"]
        out.append(
            dict(
                st,
                datasets=dss,
                seeds=seeds,
                radii=radii,
                part="scaling",
                grid="scaling",
                attack_points=sc["attack_points"],
            )  # fmt: skip
        )
    return out


def decomposed_runs(cfg: dict, study: str) -> list[dict[str, Any]]:
    """Trained runs of two-layer nets: the lambda decomposition applies to them."""
    runs = plan.as_dicts(plan.trained_runs(cfg, study))
    return [r for r in runs if cfg["models"][r["model"]]["kind"] == "two_layer"]


def first_seed_decomposed(cfg: dict, study: str) -> list[dict[str, Any]]:
    seed = cfg["studies"][study]["seeds"][0]
    return [r for r in decomposed_runs(cfg, study) if r["seed"] == seed]


def scaling_runs(cfg: dict, study: str) -> list[plan.Run]:
    """The scaling sweep's trained runs and robust references (part "scaling")."""
    part = plan.study_parts(cfg, study, ["scaling"])
    if not part:
        return []
    dss, seeds = part[0]["datasets"], part[0]["seeds"]
    return plan.trained_runs(cfg, study, dss, seeds) + plan.reference_runs(cfg, study, dss, seeds)


def attack_runs(cfg: dict, study: str, grid: str) -> list[dict[str, Any]]:
    """The runs attacked on ``grid`` (main: the study's trained nets and reference; scaling:
    the sweeps'), once per binary readout they are read through (``plan.with_readouts``)."""
    runs = plan.main_runs(cfg, study) if grid == "main" else plan.as_dicts(scaling_runs(cfg, study))
    return plan.with_readouts(cfg, study, runs)


def figures(cfg: dict, st: dict) -> list[str]:
    names = ["cosine_heatmaps", "robust_accuracy_vs_radius", "margin_gradient"]
    if decomposed(cfg, st):
        names.insert(1, "lambda_trajectories")
    if st.get("scaling") is not None:
        names.append("critical_radius_scaling")
    return names


def outputs(cfg: dict, name: str, default: bool) -> list[str]:
    st = cfg["studies"][name]
    tables = ("summary", "scaling_summary") if st.get("scaling") is not None else ("summary",)
    per_point = f"results/{name}/figures/margin_gradient_summary.csv"  # + the figure's CSV
    return [*figure_files(name, figures(cfg, st), tables), per_point]


def check(cfg: dict, st: dict, where: str) -> None:
    check_registry_names(cfg, st, where, ("datasets", "models", "optimizers", "attacks"))
    check_trained_models(cfg, st, where, FLAT_MODELS)
    ref = st.get("reference")
    if ref is not None and (
        ref not in cfg["models"] or cfg["models"][ref]["kind"] != "robust_reference"
    ):
        raise ConfigError(
            f"config key {where}.reference: {ref!r} must name a model of kind robust_reference"
        )
    dec = decomposed(cfg, st)
    for i, dn in enumerate(st["datasets"]):
        if cfg["datasets"][dn]["kind"] != "clusters":
            raise ConfigError(
                f"config key {where}.datasets[{i}]: feature_averaging needs clusters data"
            )
        if dec:
            _check_decomposable(cfg["datasets"][dn], f"datasets.{dn}")
    check_kinds(cfg, st, where, "optimizers", NETWORK_OPTIMIZERS)
    check_attacks(cfg, st, where, CLUSTER_DATA)
    if st.get("scaling") is not None:
        _check_scaling(cfg, st["scaling"], f"{where}.scaling")


def _check_scaling(cfg: dict, sc: dict, where: str) -> None:
    """The sweeps' variants must be valid clusters data (the lambda decomposition is not
    run on them: n_train > d is fine here)."""
    if sc["dataset"] not in cfg["datasets"]:
        raise ConfigError(
            f"config key {where}.dataset: {sc['dataset']!r} is not defined under datasets"
        )
    base = cfg["datasets"][sc["dataset"]]
    for key, values in sc["sweeps"].items():
        for i, v in enumerate(values):
            at = f"{where}.sweeps.{key}[{i}]"
            if key in ("k", "d", "n_train") and float(v) != int(v):
                raise ConfigError(f"config key {at}: {key} must be an integer, got {v}")
            _check_clusters(dict(base, **{key: _typed(key, v)}), at)


def _check_decomposable(ds: dict, where: str) -> None:
    """The lambda decomposition needs the training inputs to be independent: n_train <= d."""
    if ds["n_train"] > ds["d"]:
        raise ConfigError(
            f"config key {where}.n_train: n_train={ds['n_train']} > d={ds['d']}: the lambda "
            "decomposition of a feature_averaging study needs n_train <= d"
        )
