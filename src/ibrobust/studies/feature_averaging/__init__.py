"""Study FA (kind ``feature_averaging``): binary vs k-class training on orthogonal clusters
(Li et al., ICLR 2025): cosine heatmaps, lambda decomposition of two-layer nets, robust
accuracy vs radius against a robust reference (each binary readout of the k-class nets,
``readouts``), margin vs input gradient per test point, and the critical-radius sweeps over
dataset keys (``scaling.sweeps``: the datasets ``<base>@<key>=<value>``, attack grid
``scaling``).
Rules: ``rules/fa.smk`` (+ the generic network rules).

The study's code is this package: its planning and checks (here), :mod:`.claims` (its
``claims.yaml``, with :mod:`.claim_context`, :mod:`.measures`, :mod:`.sweep_measures`),
:mod:`.scaling` (the sweeps' table and slopes), :mod:`.tables` (the
summary table), :mod:`.plots` (its figures) and :mod:`.margin_gradient_figure`. The math it reads is shared:
:mod:`ibrobust.analysis.decomposition`, :mod:`~ibrobust.analysis.cosines`,
:mod:`~ibrobust.analysis.margin_gradient`, :mod:`~ibrobust.analysis.robustness`."""

from __future__ import annotations

from typing import Any

from ibrobust.errors import ConfigError
from ibrobust.kinds import DATASETS, MODELS
from ibrobust.studies import figure_files, plan
from ibrobust.studies.checks import (
    check_attacks,
    check_datasets,
    check_optimizers,
    check_reference,
    check_registry_names,
    check_trained_models,
)
from ibrobust.studies.expansion import sweep_dataset, typed

# what the study reads of its data: the cosines of the neurons with the cluster means, the
# decomposition (their noise too), the robust reference (built from them)
DATA = frozenset({"cluster_means"})


def decomposes(cfg: dict, model: str) -> bool:
    """Whether the lambda decomposition applies to a model (its kind's ``decomposition``)."""
    return MODELS.of(cfg["models"][model])["decomposition"]


def decomposed(cfg: dict, st: dict) -> bool:
    """Whether the study trains models the lambda decomposition applies to."""
    return any(decomposes(cfg, m) for m in st["models"])


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
                d = dict(base, **{key: typed(base, key, v)})["d"]
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
    """Trained runs of models the lambda decomposition applies to (two-layer nets)."""
    runs = plan.as_dicts(plan.trained_runs(cfg, study))
    return [r for r in runs if decomposes(cfg, r["model"])]


def sweep_decomposed_runs(cfg: dict, study: str) -> list[dict[str, Any]]:
    """The scaling sweep's trained runs whose nets are decomposed (``scaling.decompose``):
    those of models the decomposition applies to, on the sweep's datasets where it is defined
    (:func:`decomposable`: n_train <= d); the sweep table's lambda columns are NaN for the
    rest. Base-dataset runs are the study's own (the same jobs)."""
    sc = cfg["studies"][study].get("scaling")
    part = plan.study_parts(cfg, study, ["scaling"])
    if sc is None or not sc["decompose"] or not part:
        return []
    entries = _sweep_entries(cfg, sc)
    runs = plan.as_dicts(plan.trained_runs(cfg, study, part[0]["datasets"], part[0]["seeds"]))
    return [r for r in runs if decomposes(cfg, r["model"]) and decomposable(entries[r["dataset"]])]


def _sweep_entries(cfg: dict, sc: dict) -> dict[str, dict]:
    """Each of the sweeps' datasets -> its entry (the base entry with the swept key set)."""
    base = cfg["datasets"][sc["dataset"]]
    return {
        sweep_dataset(cfg, sc["dataset"], key, v): dict(base, **{key: typed(base, key, v)})
        for key, values in sc["sweeps"].items()
        for v in values
    }


def decomposable(ds: dict) -> bool:
    """Whether the lambda decomposition is defined on a dataset (:func:`_check_decomposable`'s
    requirement, n_train <= d: GD's coefficients on the training inputs are unique)."""
    return "n_train" in ds and "d" in ds and ds["n_train"] <= ds["d"]


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


WORST = "worst"  # the worst case over a grid's attacks (the attack tables' name for it)


def refined_runs(cfg: dict, study: str, grid: str) -> list[dict[str, Any]]:
    """The fa_refine jobs of one attack grid (``refine.radii``): the grid's 2-class trained
    runs, once per critical radius refined on it (key ``radius``: worst or an attack)."""
    ref = cfg["studies"][study].get("refine")
    names = (ref or {}).get("radii", {}).get(grid) or []
    models = set(cfg["studies"][study]["models"])
    runs = [
        {k: v for k, v in r.items() if k != "readout"}
        for r in attack_runs(cfg, study, grid)
        if r["supervision"] == "binary" and r["model"] in models
    ]
    runs = [dict(t) for t in dict.fromkeys(tuple(r.items()) for r in runs)]  # one per readout
    return [dict(r, grid=grid, radius=name) for r in runs for name in names]


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
    check_datasets(cfg, st, where, ("flat",), DATA)
    check_trained_models(cfg, st, where, st["datasets"])
    check_reference(cfg, st, where, st["datasets"])
    if decomposed(cfg, st):
        for dn in st["datasets"]:
            _check_decomposable(cfg["datasets"][dn], f"datasets.{dn}")
    check_optimizers(cfg, st, where, "network")
    check_attacks(cfg, st, where, st["datasets"])
    if st.get("scaling") is not None:
        _check_scaling(cfg, st, f"{where}.scaling")
    if st.get("refine") is not None:
        _check_refine(st, f"{where}.refine")


def _check_refine(st: dict, where: str) -> None:
    """Each refined radius is the worst case or one of the study's attacks, on a grid the
    study has (scaling only with a scaling sweep)."""
    for grid, names in st["refine"]["radii"].items():
        if grid == "scaling" and st.get("scaling") is None:
            raise ConfigError(f"config key {where}.radii.scaling: the study has no scaling sweep")
        for i, name in enumerate(names):
            if name != WORST and name not in st["attacks"]:
                raise ConfigError(
                    f"config key {where}.radii.{grid}[{i}]: {name!r} is neither {WORST!r} nor "
                    f"one of the study's attacks {list(st['attacks'])}"
                )


def _check_scaling(cfg: dict, st: dict, where: str) -> None:
    """The sweeps' variants must be valid datasets of the base's kind. n_train > d is fine
    here: the lambda decomposition (``decompose``) runs only on the variants where it is
    defined, and needs a model it applies to and at least one such variant."""
    sc = st["scaling"]
    if sc["dataset"] not in cfg["datasets"]:
        raise ConfigError(
            f"config key {where}.dataset: {sc['dataset']!r} is not defined under datasets"
        )
    base = cfg["datasets"][sc["dataset"]]
    props = DATASETS.schema(base["kind"])["properties"]
    for key, values in sc["sweeps"].items():
        if key not in props:
            raise ConfigError(
                f"config key {where}.sweeps.{key}: not a setting of the base dataset's kind "
                f"{base['kind']!r} (its settings: {sorted(set(props) - {'kind'})})"
            )
        integer = isinstance(typed(base, key, 1), int)
        for i, v in enumerate(values):
            at = f"{where}.sweeps.{key}[{i}]"
            if integer and float(v) != int(v):
                raise ConfigError(f"config key {at}: {key} must be an integer, got {v}")
            DATASETS.check_entry(dict(base, **{key: typed(base, key, v)}), at)


def _check_decomposable(ds: dict, where: str) -> None:
    """The lambda decomposition needs the training inputs to be independent: n_train <= d."""
    if "n_train" not in ds or "d" not in ds:  # a dataset kind without them cannot say
        raise ConfigError(
            f"config key {where}: the lambda decomposition needs the dataset's n_train and d "
            f"(settings its kind {ds['kind']!r} does not have)"
        )
    if ds["n_train"] > ds["d"]:
        raise ConfigError(
            f"config key {where}.n_train: n_train={ds['n_train']} > d={ds['d']}: the lambda "
            "decomposition of a feature_averaging study needs n_train <= d"
        )
