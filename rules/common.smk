# Config validation, wildcard constraints, and the input/param functions every rule uses.
import os
import re
import sys
import time
from functools import cache
from pathlib import Path

from snakemake.exceptions import WorkflowError

SCRIPTS = Path(workflow.basedir) / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
from _libpath import use_checkout_library  # noqa: E402

# this checkout's src/ first for the Snakefile and, through PYTHONPATH, for every job
use_checkout_library(workflow.basedir)

import _tracking  # noqa: E402  (workflow_scripts/_tracking/: run records -> MLflow runs)
import _preflight  # noqa: E402  (workflow_scripts/_preflight.py: image data checked in onstart)
import _lifecycle  # noqa: E402  (workflow_scripts/_lifecycle.py: jobs end when snakemake is gone)
import _scheduler  # noqa: E402  (workflow_scripts/_scheduler.py: Snakemake's timer chains, onstart)
import _signals  # noqa: E402  (workflow_scripts/_signals.py: SIGINT/SIGTERM stop the jobs)
from ibrobust import kinds, studies  # noqa: E402
from ibrobust.studies import plan  # noqa: E402
from ibrobust.attacks.policy import attack_applies, grid_attacks, radius_grids  # noqa: E402
from ibrobust.config import ConfigError, load_schema, validate_config  # noqa: E402
from ibrobust.config.overlay import OverlayError, check_files as check_config_files  # noqa: E402
from ibrobust.studies.expansion import (  # noqa: E402
    derived_datasets,
    derived_optimizers,
    expand_scale,
    scale_rungs,
)
from ibrobust.provenance import code_hash, config_hash  # noqa: E402
from ibrobust.device import planned_cuda  # noqa: E402

# ---- validate before anything is scheduled ------------------------------------------
try:  # keys written twice in config.yaml or an overlay (Snakemake keeps the last silently)
    check_config_files(workflow.configfiles)
except OverlayError as err:
    raise WorkflowError(f"invalid config file: {err}") from None
try:  # the config as written (defaults filled), then the studies' scale-ladder rungs added
    _schema = load_schema(Path(workflow.basedir) / "schemas" / "config.schema.yaml")
    _validated = expand_scale(validate_config(config, _schema), _schema)
except ConfigError as err:
    raise WorkflowError(f"invalid configuration: {err}") from None
config.clear()
config.update(_validated)
CONFIG_HASH = config_hash(config)
# the config key `device` (auto | cpu | cuda; ibrobust.device): every rule that computes with
# torch passes it as params.device, and its job resolves it before any work. Such a rule
# claims the `gpu` resource (profiles/default: gpu=1, one GPU job at a time) when its job will
# run on CUDA as planning can tell without importing torch (ibrobust.device.planned_cuda:
# cuda -> 1, cpu -> 0, auto -> a CUDA build of torch and an NVIDIA device node on this host)
DEVICE = config["device"]
GPU_JOB = 1 if planned_cuda(DEVICE) else 0

STUDIES = config["studies"]  # with the rungs of every scale ladder (ibrobust.studies.expansion.expand_scale)
ENABLED = config["only_studies"] or [s for s, st in STUDIES.items() if st["enabled"]]
# scale ladders: rung study -> Rung (a rung equal to its study is the study itself); the
# studies built only by the `scale` target are left out of `reproduce` and its ledger
SCALE_RUNGS = scale_rungs(config)
LADDER_ONLY = [s for s, r in SCALE_RUNGS.items() if s != r.ladder]
BASE_STUDIES = [s for s in STUDIES if s not in LADDER_ONLY]
# studies whose models go through the generic dataset -> train -> analyze/attack rules
NET_STUDIES = [s for s, st in STUDIES.items() if kinds.STUDIES.of(st)["network"]]
STUDY_RULES = studies.rules_files()  # study kind -> its rules file (the Snakefile includes them)
REFERENCE_OPTIMIZER = plan.REFERENCE_OPTIMIZER  # the optimizer wildcard of a constructed model


def studies_of(kind):
    """The config's studies of one kind."""
    return studies.studies_of(config, kind)


# ---- datasets: registry entries and the sweeps' derived variants <base>@<key>=<value> ----
# (each study kind's ``sweeps``; ibrobust.studies.expansion.dataset_sweeps)
DATASETS = {**config["datasets"], **derived_datasets(config)}


# optimizer variants <base>@eps=<value> a study derives (robust ERM at each training radius)
OPTIMIZERS = {**config["optimizers"], **derived_optimizers(config)}
# a registry section -> its entries (derived variants included): what kind_module reads
ENTRIES = {**config, "datasets": DATASETS, "optimizers": OPTIMIZERS}


def dataset_config(name):
    return DATASETS[name]


def data_root_for(name):
    """The data root a dataset reads (its kind's ``reads_data_root``; None for synthetic
    data, so moving data_root reruns nothing of it)."""
    return config["data_root"] if kinds.DATASETS.of(DATASETS[name])["reads_data_root"] else None


# ---- the helpers rules files use ----------------------------------------------------------
def alternatives(names):
    """A wildcard regex matching exactly ``names`` (longest first, escaped); "" for none."""
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


NO_MATCH = "^$"  # a wildcard constraint no value matches (no study of a kind in the config)


def study_constraint(kind=None, studies=None):
    """The ``study`` wildcard's regex for the rules of a study kind's rules file: that kind's
    studies of the config (None: the studies of the generic network rules). The Snakefile
    applies it to every rule of the kind's file, so a file's rules never match another
    kind's study (e.g. two kinds' results/{study}/figures/summary.csv). ``studies``: exactly
    these (a generic rule made for one study, e.g. rules/attack.smk's per-study readouts)."""
    if studies is not None:
        return alternatives(studies) or NO_MATCH
    return alternatives(NET_STUDIES if kind is None else studies_of(kind)) or NO_MATCH


def kind_module(section, name):
    """The module of the kind of entry ``name`` of a registry section (``"models"``,
    ``"attacks"``, ...; derived dataset and optimizer variants included): what a rule adds
    to its ``code`` when its job loads that kind."""
    return kinds.REGISTRIES[section].module_name(ENTRIES[section][name]["kind"])


def kind_modules(section, names):
    """:func:`kind_module` of each of ``names``, once each, sorted."""
    return sorted({kind_module(section, n) for n in names})


# the generic network rules: their studies (a kind's rules file gets its own, see Snakefile)
wildcard_constraints:
    study=study_constraint(),
    dataset=alternatives(DATASETS),
    model=alternatives(config["models"]),
    optimizer=alternatives([*OPTIMIZERS, REFERENCE_OPTIMIZER]),
    supervision="binary|multiclass",
    seed=r"\d+",
    grid="main|scaling|l2|linf|l1",
    readout="sum|log_odds|argmax",  # ibrobust.models.readout.READOUTS (the schemas' enum)


# ---- code provenance: rerun a rule when any library module its script imports changes ----
@cache
def code(script, *modules):
    """Hash of workflow_scripts/<script>.py, every module it imports, and the given kind
    modules with their imports (see ibrobust.provenance and ibrobust.kinds)."""
    return code_hash(SCRIPTS / f"{script}.py", tuple(sorted(set(modules))))


def dataset_code(wildcards):
    return code("dataset", kind_module("datasets", wildcards.dataset))


def train_code(wildcards):
    """The model kind's module, the training path's and (generic path) the optimizer kind's."""
    return code("train", *kinds.train_modules(model_params(wildcards), optimizer_params(wildcards)))


def analyze_code(wildcards):
    return code("analyze", kind_module("models", wildcards.model))


def attack_code(wildcards):
    attacks = kind_modules("attacks", attack_params(wildcards))
    return code("attack", kind_module("models", wildcards.model), *attacks)


# ---- runs and paths (ibrobust.studies.plan) ------------------------------------------------
_runs = plan.as_dicts
run_dir = plan.run_dir
files = plan.files


def study_parts(study, names=None):
    return plan.study_parts(config, study, names)


def part_of(study, dataset, grid=None):
    return plan.part_of(config, study, dataset, grid)


def trained_runs(study, datasets=None, seeds=None, parts=None):
    return plan.trained_runs(config, study, datasets, seeds, parts)


def reference_runs(study, datasets=None, seeds=None):
    return plan.reference_runs(config, study, datasets, seeds)


def first_seed_runs(study):
    return plan.first_seed_runs(config, study)


def main_runs(study):
    return plan.main_runs(config, study)


def _study_models(study):
    st = STUDIES[study]
    names = [m for p in study_parts(study) for m in p["models"]]
    names += [st["reference"]] if st.get("reference") else []
    return sorted(set(names))


def model_kinds(wildcards):
    """The study's models (trained and reference) -> their kinds (a column of tables)."""
    return {m: config["models"][m]["kind"] for m in _study_models(wildcards.study)}


def model_labels(wildcards):
    """The study's models (trained and reference) -> how figures and tables name them: their
    kind's ``label`` (e.g. "robust reference"), or None: by their supervision."""
    return {m: kinds.MODELS.of(config["models"][m])["label"] for m in _study_models(wildcards.study)}


def attack_runs(study, runs):
    """``runs`` with the grid of each of their attack jobs (one entry per job)."""
    return [dict(r, grid=g) for r in runs for g in attack_grids(study, r["dataset"])]


def readout_runs(study, runs):
    """``runs`` once per binary readout they are attacked under (key ``readout``)."""
    return plan.with_readouts(config, study, runs)


def readout_files(study, runs, grid, name):
    """attack/<grid>/[<readout>/]<name> of ``readout_runs(study, runs)``."""
    return plan.attack_files(study, runs, grid, name)


def attack_files(study, runs, name):
    """attack/<grid>/<name> of ``attack_runs(study, runs)``."""
    return [f"{run_dir(study, **{k: v for k, v in r.items() if k != 'grid'})}/attack/{r['grid']}/{name}"
            for r in runs]


def study_outputs(study, default=False):
    """Every figure and table of a study (what `snakemake <study>` builds); with ``default``,
    what the default target builds of it (its kind's ``outputs``)."""
    return studies.study_outputs(config, study, default)


def decided_outputs(study):
    """What a look builds of an extended study: the outputs already built here (their
    aggregates rerun over the new units: their inputs changed), or all of them for a study
    never built here. A part the plan did not extend and that was never built (PRELU's MNIST
    half when only the synthetic half ran) stays unbuilt: the plan priced none of it."""
    outs = study_outputs(study)
    built = [f for f in outs if os.path.exists(f)]
    return built or outs


CLAIMS_LEDGER = [f"results/claims/claims.{ext}" for ext in ("md", "csv", "html", "png", "pdf")]
# the full ledger of `snakemake reproduce`: every study of the config, every output
CLAIMS_LEDGER_ALL = [f"results/claims/all/claims.{ext}" for ext in ("md", "csv", "html", "png", "pdf")]
# the ledger of `snakemake scale`: every rung of every scale ladder, and each claim's trend
CLAIMS_LEDGER_SCALE = [f"results/claims/scale/claims.{ext}" for ext in ("md", "csv", "html", "png", "pdf")]
SCALE_TRENDS = [f"results/claims/scale/trend.{ext}" for ext in ("md", "csv")]


def ledger_config(names):
    """What a ledger's claims read of the config: the studies ``names`` (the ones it judges;
    a scale ladder's rungs only in the scale ledger), the registries they use."""
    return dict(
        studies={s: STUDIES[s] for s in names},
        only_studies=config["only_studies"],
        **{k: config[k] for k in ("datasets", "models", "optimizers")},
    )


def default_targets():
    """The default target: the enabled studies' outputs, then the claims ledger over them."""
    return [f for s in ENABLED for f in study_outputs(s, default=True)] + CLAIMS_LEDGER


# ---- params ----------------------------------------------------------------------------
def model_params(wildcards):
    return config["models"][wildcards.model]


def optimizer_params(wildcards):
    if wildcards.optimizer == REFERENCE_OPTIMIZER:
        return {"kind": REFERENCE_OPTIMIZER}
    return OPTIMIZERS[wildcards.optimizer]


def attack_task(wildcards):
    """What counts as correct: the study kind's ``task`` of the supervision (binary: the
    binary readout; fine: the labels a k-class model was trained on)."""
    return studies.hook(STUDIES[wildcards.study]["kind"], "task")(wildcards.supervision)


def attack_part(wildcards):
    return part_of(wildcards.study, wildcards.dataset, wildcards.grid)


def attack_params(wildcards):
    """Attacks of this job: those of its part and grid (a norm grid runs its norm's attacks)
    that apply to the model (fine-label losses need a k-class model; the fine task needs them)."""
    part, task = attack_part(wildcards), attack_task(wildcards)
    return {name: config["attacks"][name] for name in grid_attacks(config, part["attacks"], wildcards.grid)
            if attack_applies(config["attacks"][name], wildcards.supervision, task)}


def study_radii(study, dataset, grid=None):
    """The radius grid of a study's part for one dataset: a list, or a mapping norm -> list
    (radii given per dataset are read for ``dataset``)."""
    radii = part_of(study, dataset, grid)["radii"]
    if isinstance(radii, dict) and dataset in radii:
        radii = radii[dataset]
    if isinstance(radii, dict):
        return {norm: [float(r) for r in v] for norm, v in radii.items()}
    return [float(r) for r in radii]


def attack_grids(study, dataset):
    """The attack grids of a run: "main" for list-valued radii, one per norm for radii by norm."""
    return list(radius_grids(study_radii(study, dataset)))


def attack_radii(wildcards):
    part = attack_part(wildcards)
    if part.get("grid") == wildcards.grid:
        return [float(r) for r in part["radii"][wildcards.dataset]]
    own = (part.get("run_radii") or {}).get(wildcards.optimizer)  # a part read per run (PRICE-NN)
    if own is not None and wildcards.grid == "main":
        return [float(r) for r in own]
    grids = radius_grids(study_radii(wildcards.study, wildcards.dataset))
    if wildcards.grid not in grids:
        raise ValueError(f"runs on {wildcards.dataset} have attack grids {list(grids)}, "
                         f"not {wildcards.grid!r}")
    return grids[wildcards.grid]


def attack_points(wildcards):
    return attack_part(wildcards)["attack_points"]


def plot_params(wildcards):
    return STUDIES[wildcards.study]["plots"]


# ---- MLflow: one parent run per invocation; jobs write run records, this process syncs them -----
TRACKING = _tracking.WorkflowTracking(config, CONFIG_HASH, workflow.basedir)
# files a rules file also puts on the parent run when this invocation wrote them
# (path -> artifact folder; e.g. the claims ledger, rules/claims.smk)
PARENT_ARTIFACTS = {}
INVOCATION_START = time.time()
# a password given with --config stays in Snakemake's log (.snakemake/log): say so, once
_SECRET_WARNING = _tracking.command_line_warning(workflow.config_settings.config)
if _SECRET_WARNING and workflow.is_main_process:
    print(_SECRET_WARNING, file=sys.stderr, flush=True)


onstart:
    # one pending scheduler re-evaluation, not one per finished job (a Snakemake 9 defect)
    _scheduler.coalesce_reevaluations(getattr(workflow, "scheduler", None))
    _preflight.check_data(workflow, DATASETS, config["data_root"])  # before the parent run
    _lifecycle.export()  # jobs end themselves when this process is gone
    _signals.stop_jobs_on_signal(workflow)  # kill -INT/-TERM of snakemake alone stops the jobs
    TRACKING.start(_tracking.Invocation.of(workflow, STUDIES))  # the parent record, the sync thread


onsuccess:
    TRACKING.log_parent_artifacts(PARENT_ARTIFACTS, INVOCATION_START)
    TRACKING.end("FINISHED")


onerror:
    TRACKING.end("KILLED" if _signals.stopped_by_signal() else "FAILED")
    _signals.exit_without_teardown()  # a stopped run ends once Snakemake is done


def main_grid_wildcards(w):
    """A job's wildcards plus ``grid="main"``: the attack job's main radius grid, for a rule
    that repeats it (PRELU's prelu_refine)."""
    from types import SimpleNamespace

    return SimpleNamespace(**dict(w.items()), grid="main")


# Study FA's refined critical radii (rule fa_refine, rules/fa.smk)
from ibrobust.studies import feature_averaging as _fa_plan  # noqa: E402


def fa_refined_files(study, grid):
    """attack/<grid>/refined.<radius>.json of the grid's fa_refine jobs (the study's refine)."""
    keys = ("dataset", "model", "optimizer", "supervision", "seed")
    return [os.path.join(run_dir(study, **{k: r[k] for k in keys}), "attack", grid,
                         f"refined.{r['radius']}.json")
            for r in _fa_plan.refined_runs(config, study, grid)]


def fa_refine_attacks(w):
    """The attacks of the refined radius: the grid's (worst) or the one named."""
    attacks = attack_params(w)
    if w.radius == _fa_plan.WORST:
        return attacks
    if w.radius not in attacks:
        raise ValueError(f"fa_refine: {w.radius!r} is not an attack of grid {w.grid!r} "
                         f"({sorted(attacks)})")
    return {w.radius: attacks[w.radius]}
