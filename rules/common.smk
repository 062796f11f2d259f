# Config validation, wildcard constraints, and the input/param functions every rule uses.
import os
import re
import sys
from functools import cache
from pathlib import Path

from snakemake.exceptions import WorkflowError

SCRIPTS = Path(workflow.basedir) / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
from _libpath import use_checkout_library  # noqa: E402

# this checkout's src/ first for the Snakefile and, through PYTHONPATH, for every job
use_checkout_library(workflow.basedir)

import _tracking  # noqa: E402  (workflow_scripts/_tracking.py: the only MLflow code)
from ibrobust import kinds  # noqa: E402
from ibrobust.config import ConfigError, load_schema, validate_config  # noqa: E402
from ibrobust.provenance import code_hash, config_hash  # noqa: E402

# ---- validate before anything is scheduled ------------------------------------------
try:
    _validated = validate_config(config, load_schema(Path(workflow.basedir) / "schemas" / "config.schema.yaml"))
except ConfigError as err:
    raise WorkflowError(f"invalid configuration: {err}") from None
config.clear()
config.update(_validated)
CONFIG_HASH = config_hash(config)

STUDIES = config["studies"]
ENABLED = [s for s, st in STUDIES.items() if st["enabled"]]
# kinds whose models go through the generic dataset -> train -> analyze/attack rules
NETWORK_KINDS = ("feature_averaging", "feature_averaging_images")
NET_STUDIES = [s for s, st in STUDIES.items() if st["kind"] in NETWORK_KINDS]
FA_STUDIES = [s for s, st in STUDIES.items() if st["kind"] == "feature_averaging"]
IMAGE_STUDIES = [s for s, st in STUDIES.items() if st["kind"] == "feature_averaging_images"]
PRICE_STUDIES = [s for s, st in STUDIES.items() if st["kind"] == "price_linear"]


# ---- datasets: registry entries and the scaling sweep's derived variants ---------------
def _variant_name(base, key, value):
    return f"{base}@{key}={value:g}"


def _sweep_variants():
    out = {}
    for st in STUDIES.values():
        sc = st.get("scaling")
        if sc is None:
            continue
        base = config["datasets"][sc["dataset"]]
        for v in sc["values"]:
            typed = int(v) if sc["key"] in ("k", "d", "n_train") else float(v)
            if base[sc["key"]] == typed:
                continue  # the base dataset itself: reuse its jobs
            out[_variant_name(sc["dataset"], sc["key"], v)] = dict(base, **{sc["key"]: typed})
    return out


DATASETS = {**config["datasets"], **_sweep_variants()}


def dataset_config(name):
    return DATASETS[name]


def data_root_for(name):
    """The data root an image dataset reads (None for synthetic data: no rerun when it moves)."""
    return config["data_root"] if DATASETS[name]["kind"] == "image" else None


def scaling_dataset(study, value):
    sc = STUDIES[study]["scaling"]
    base = config["datasets"][sc["dataset"]]
    typed = int(value) if sc["key"] in ("k", "d", "n_train") else float(value)
    return sc["dataset"] if base[sc["key"]] == typed else _variant_name(sc["dataset"], sc["key"], value)


def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


REFERENCE_OPTIMIZER = "handbuilt"

# study: the network rules; price_linear rules set their own (PRICE_WILDCARDS)
wildcard_constraints:
    study=_alternatives(NET_STUDIES) or "^$",
    dataset=_alternatives(DATASETS),
    model=_alternatives(config["models"]),
    optimizer=_alternatives([*config["optimizers"], REFERENCE_OPTIMIZER]),
    supervision="binary|multiclass",
    seed=r"\d+",
    grid="main|scaling",


# ---- code provenance: rerun a rule when any library module its script imports changes ----
@cache
def code(script, *modules):
    """Hash of workflow_scripts/<script>.py, every module it imports, and the given kind
    modules with their imports (see ibrobust.provenance and ibrobust.kinds)."""
    return code_hash(SCRIPTS / f"{script}.py", tuple(sorted(set(modules))))


def _model_module(wildcards):
    return kinds.module_of(kinds.MODELS, config["models"][wildcards.model]["kind"], "model")


def dataset_code(wildcards):
    kind = DATASETS[wildcards.dataset]["kind"]
    return code("dataset", kinds.module_of(kinds.DATASETS, kind, "dataset"))


def train_code(wildcards):
    path = kinds.trainer(model_params(wildcards), optimizer_params(wildcards))
    return code("train", _model_module(wildcards), kinds.TRAINERS[path])


def analyze_code(wildcards):
    return code("analyze", _model_module(wildcards))


def attack_code(wildcards):
    attacks = [kinds.module_of(kinds.ATTACKS, a["kind"], "attack") for a in attack_params(wildcards).values()]
    return code("attack", _model_module(wildcards), *attacks)


# ---- paths ---------------------------------------------------------------------------
RUN_DIR = "results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}"


def run_dir(study, dataset, model, optimizer, supervision, seed):
    return RUN_DIR.format(study=study, dataset=dataset, model=model, optimizer=optimizer,
                          supervision=supervision, seed=seed)


def trained_runs(study, datasets=None, seeds=None):
    """(dataset, model, optimizer, supervision, seed) of every trained model of a study."""
    st = STUDIES[study]
    return [(ds, m, o, sup, seed)
            for ds in (datasets or st["datasets"]) for m in st["models"] for o in st["optimizers"]
            for sup in st["supervisions"] for seed in (seeds or st["seeds"])]


def reference_runs(study, datasets=None, seeds=None):
    st = STUDIES[study]
    if st.get("reference") is None:
        return []
    return [(ds, st["reference"], REFERENCE_OPTIMIZER, "binary", seed)
            for ds in (datasets or st["datasets"]) for seed in (seeds or st["seeds"])]


def scaling_runs(study):
    st = STUDIES[study]
    sc = st.get("scaling")
    if sc is None:
        return []
    seeds = sc["seeds"] or st["seeds"]
    dss = [scaling_dataset(study, v) for v in sc["values"]]
    return trained_runs(study, dss, seeds) + reference_runs(study, dss, seeds)


# ---- runs that figures and tables gather ----
FIGURES = "results/{study}/figures"


def _runs(runs):
    return [dict(zip(("dataset", "model", "optimizer", "supervision", "seed"), r)) for r in runs]


def first_seed_runs(study):
    return _runs(trained_runs(study, seeds=[STUDIES[study]["seeds"][0]]))


def first_seed_decomposed(study):
    seed = STUDIES[study]["seeds"][0]
    return [r for r in decomposed_runs(study) if r["seed"] == seed]


def main_runs(study):
    return _runs(trained_runs(study) + reference_runs(study))


def files(study, runs, tail):
    return [f"{run_dir(study, **r)}/{tail}" for r in runs]


def decomposed_runs(study):
    """Trained runs of two-layer nets: the lambda decomposition applies to them."""
    return [r for r in _runs(trained_runs(study)) if config["models"][r["model"]]["kind"] == "two_layer"]


def figure_names(study):
    """The figures (PNG + PDF + CSV each) of a study, by kind."""
    st = STUDIES[study]
    if st["kind"] == "price_linear":
        return list(PRICE_FIGURES)
    if st["kind"] == "feature_averaging_images":
        return ["cosine_heatmaps", "robust_accuracy_vs_radius"]
    names = ["cosine_heatmaps", "robust_accuracy_vs_radius"]
    if decomposed_runs(study):
        names.insert(1, "lambda_trajectories")
    if st.get("scaling") is not None:
        names.append("critical_radius_scaling")
    return names


def study_outputs(study):
    """Every figure and table of a study (what `snakemake <study>` builds)."""
    base = f"results/{study}/figures/"
    out = [f"{base}{n}{ext}" for n in figure_names(study) for ext in (".png", ".pdf", ".csv")]
    return out + [f"{base}summary.csv", f"{base}summary.md"]


def default_targets():
    return [f for s in ENABLED for f in study_outputs(s)]


# ---- Study PRICE-LIN (kind price_linear): regime (dataset) x n x algorithm (optimizer) ------
PRICE_WILDCARDS = dict(
    study=_alternatives(PRICE_STUDIES) or "^$",
    dataset=_alternatives({d for s in PRICE_STUDIES for d in STUDIES[s]["datasets"]}) or "^$",
    optimizer=_alternatives({o for s in PRICE_STUDIES for o in STUDIES[s]["optimizers"]}) or "^$",
    n=r"\d+",
    gap="robust|clean",
)
FA_WILDCARDS = dict(study=_alternatives(FA_STUDIES) or "^$")
IMAGE_WILDCARDS = dict(study=_alternatives(IMAGE_STUDIES) or "^$")
PRICE_FIGURES = ["gap_vs_n", "gap_difference_robust", "gap_difference_clean", "solution_cosines"]


def price_runs(study):
    """One training job per (dataset, optimizer, n): wildcards as plain python values."""
    st = STUDIES[study]
    return [dict(dataset=ds, optimizer=o, n=int(n))
            for ds in st["datasets"] for o in st["optimizers"] for n in st["n_train"]]


def price_files(study, tail):
    return [f"results/{study}/{r['dataset']}/{r['optimizer']}/n{r['n']}/{tail}"
            for r in price_runs(study)]


def price_data(wildcards):
    """What a data job draws: the dataset entry, the draws and the seed."""
    st = STUDIES[wildcards.study]
    return dict(dataset=dataset_config(wildcards.dataset), seed=int(st["seed"]),
                draws=[int(r) for r in st["draws"]])


def price_training(wildcards):
    """What a training job runs: the algorithm, the shared stopping rule, the eps grid."""
    st = STUDIES[wildcards.study]
    return dict(optimizer=config["optimizers"][wildcards.optimizer],
                stopping=dict(loss_threshold=float(st["stopping"]["loss_threshold"]),
                              max_iters=int(st["stopping"]["max_iters"])),
                eps_fractions=[float(f) for f in st["eps_fractions"]])


def price_registry(wildcards):
    """The study's dataset and optimizer entries (figure labels) and its GD - CD pair."""
    st = STUDIES[wildcards.study]
    return dict(datasets={d: dataset_config(d) for d in st["datasets"]},
                optimizers={o: config["optimizers"][o] for o in st["optimizers"]},
                gap_difference=list(st["gap_difference"]))



# ---- params ----------------------------------------------------------------------------
def model_params(wildcards):
    return config["models"][wildcards.model]


def optimizer_params(wildcards):
    if wildcards.optimizer == REFERENCE_OPTIMIZER:
        return {"kind": REFERENCE_OPTIMIZER}
    return config["optimizers"][wildcards.optimizer]


def attack_params(wildcards):
    """Attacks that apply to this model (fine-label losses need a multi-class model)."""
    st = STUDIES[wildcards.study]
    out = {}
    for name in st["attacks"]:
        a = config["attacks"][name]
        fine_loss = a["kind"] == "pgd" and a["loss"] in ("ce", "fine_margin")
        if fine_loss and wildcards.supervision != "multiclass":
            continue
        out[name] = a
    return out


def attack_readout(wildcards):
    """How the model is read as a binary classifier (the study's choice for multiclass
    models; the two modes coincide for 2-class models, so their jobs never rerun for it)."""
    if wildcards.supervision != "multiclass":
        return "sum"
    return STUDIES[wildcards.study].get("binary_readout", "sum")


def attack_task(wildcards):
    """What counts as correct: the binary task (FA studies; a k-class model is judged by its
    binary readout)."""
    return "binary"


def study_radii(study, dataset):
    """The main radius grid of a study for one dataset (a list, or a mapping per dataset)."""
    radii = STUDIES[study]["radii"]
    return [float(r) for r in (radii[dataset] if isinstance(radii, dict) else radii)]


def attack_radii(wildcards):
    st = STUDIES[wildcards.study]
    if wildcards.grid == "main":
        return study_radii(wildcards.study, wildcards.dataset)
    d = dataset_config(wildcards.dataset)["d"]
    return [round(float(f) * d**0.5, 6) for f in st["scaling"]["radius_fractions"]]


def attack_points(wildcards):
    st = STUDIES[wildcards.study]
    return st["attack_points"] if wildcards.grid == "main" else st["scaling"]["attack_points"]


def plot_params(wildcards):
    return STUDIES[wildcards.study]["plots"]


# ---- MLflow: one parent run per invocation, created before any job starts -------------------
onstart:
    _tracking.start_workflow(config, CONFIG_HASH, workflow.basedir)


onsuccess:
    _tracking.end_workflow("FINISHED")


onerror:
    _tracking.end_workflow("FAILED")
