"""Paper scale stays one overlay away: every ``configs/*_paper.yaml`` runs its study's real
target end to end (train, attack, figures, summary and the claims ledger) on tiny data.

Each run is the command of a paper-scale run on a GPU or the cluster,

    snakemake --cores N <study> --configfile configs/<x>_paper.yaml --config data_root=DIR

with a second overlay, ``tests/workflow/configs/paper_smoke/<x>_paper.yaml``, that changes
sizes only (points, steps, epochs, iterations, seeds, shorter grids of the overlay's own
values): the architectures, optimizer and attack kinds, stopping rules, real-data sources and
every other key of the paper overlay reach the jobs as a paper-scale run sets them, so a
config reason cannot fail such a run at its first job. :func:`test_size_override_changes_sizes_only`
holds the second overlay to that. Studies on MNIST read a fake MNIST (the four IDX files
torchvision reads, :func:`smk_helpers.fake_mnist`) under a temporary data root: nothing is
downloaded and the real data is not needed.

Each run's CPU seconds (the whole Snakemake process tree) go to the test artifacts'
measurements.txt.
"""

from __future__ import annotations

import copy
import json
import math
import resource
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from smk_helpers import REPO, fake_mnist, finished_rules, snakemake

pytestmark = pytest.mark.workflow

OVERLAYS = REPO / "configs"
SMOKE = Path(__file__).resolve().parent / "configs" / "paper_smoke"
LEDGER = "results/claims/claims.csv"


@dataclass(frozen=True)
class Overlay:
    study: str  # the study the overlay scales (its target: `snakemake <study>`)
    mnist: bool  # reads MNIST under data_root (the test writes a fake one there)
    rules: tuple[str, ...]  # rules the smoke run must have run (besides the ledger)
    # (file under results/<study>/, state key, expected shape): the paper's architecture ran
    arch: tuple[str, str, tuple[int, ...]]


NET = ("dataset", "train", "attack")
OVERLAY = {
    "fa_paper": Overlay(
        "fa",
        mnist=False,
        rules=(*NET, "attack_readouts_fa", "analyze", "decompose", "fa_scaling_figure"),
        # two_layer_m5 on d = 3072: (k heads, m neurons, d) first layer
        arch=("clusters_d3072/two_layer_m5/gd/multiclass/seed0/model.pt", "weight", (10, 5, 3072)),
    ),
    "margin_paper": Overlay(
        "margin",
        mnist=True,
        rules=("dataset", "margin_train", "margin_robustness", "margin_figures"),
        # the paper's CNN: fc1024 on conv64's 7 x 7 maps (the final epoch's checkpoint)
        arch=("margin_mnist_full/margin_cnn/seed0/checkpoints.pt", "fc1.weight", (1024, 3136)),
    ),
    "prelu_paper": Overlay(
        "prelu",
        mnist=True,
        rules=(*NET, "prelu_analyze", "prelu_figures", "prelu_mnist_figures"),
        # width 2000 on D = 1000 (alpha 0.11, the figure's)
        arch=(
            "prelu_clusters_d1000@alpha=0.11/prelu_h2000_p4/sgd_prelu_paper/binary/seed0/model.pt",
            "weight",
            (2000, 1000),
        ),
    ),
    "price_nn_paper": Overlay(
        "price_nn",
        mnist=True,
        rules=(*NET, "price_nn_figures"),
        # the Madry CNN at paper width: 1024 dense units on conv64's 7 x 7 maps
        arch=(
            "mnist10@n_train=40/madry_cnn_cpu/price_cnn_sd_hard@eps=0.3/multiclass/seed0/model.pt",
            "body.6.1.weight",
            (1024, 3136),
        ),
    ),
    "price_paper": Overlay(
        "price_linear",
        mnist=False,
        rules=("price_test_data", "price_train", "price_linear_figures"),
        # the overlay's new n = 512: one price_train job per (regime, n) writes every
        # algorithm's weight vector per (draw, eps fraction) of d = 512 (lin_gd, lin_cd,
        # lin_sd, diag_gd)
        arch=("teacher_w4_x512/n512/weights.npz", "w", (4, 12, 512)),
    ),
}
# configs/*_paper.yaml that are not paper scale (no smoke run of their own)
NOT_PAPER_SCALE = {
    "cross_paper": "four cross-paper studies at CPU scale over config.yaml's entries",
}

# Keys a size override may change (the last key of a config path): counts and budgets.
SIZE_KEYS = {
    "n_train", "n_test", "holdout", "attack_points", "bisection_points", "probes",
    "epochs", "max_steps", "max_iters", "n_checkpoints", "log_every", "eval_every",
    "steps", "restarts", "n_iter", "fab_iter",
}  # fmt: skip
# Grids a size override may shorten, to a sub-list of the paper overlay's own values.
GRID_KEYS = {"seeds", "draws", "alphas", "eps", "k", "d"}
# The run's selection: which studies the default target and the claims ledger cover.
SELECTION = {("only_studies",)}


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _merged(*paths: Path, **override) -> dict:
    """config.yaml and the overlays, merged as Snakemake merges --configfile files, then
    ``override`` (--config KEY=VALUE), validated with the schema's defaults filled in."""
    from snakemake.utils import update_config

    from ibrobust.config import load_schema, validate_config
    from ibrobust.studies.expansion import expand_scale

    cfg = _load(REPO / "config.yaml")
    for p in paths:
        update_config(cfg, copy.deepcopy(_load(p)))
    cfg.update(override)
    schema = load_schema(REPO / "schemas" / "config.schema.yaml")
    return expand_scale(validate_config(cfg, schema), schema)


def _leaves(obj, path=()) -> dict[tuple, object]:
    """path -> value of every non-mapping value (lists are values)."""
    if isinstance(obj, dict):
        return {p: v for k, val in obj.items() for p, v in _leaves(val, (*path, k)).items()}
    return {path: obj}


def test_every_paper_overlay_has_a_smoke_run():
    found = {p.stem for p in OVERLAYS.glob("*_paper.yaml")}
    assert found == set(OVERLAY) | set(NOT_PAPER_SCALE)
    assert {p.stem for p in SMOKE.glob("*.yaml")} == set(OVERLAY)


@pytest.mark.parametrize("path", sorted(OVERLAYS.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_command_in_an_overlays_header_parses_to_its_targets(path):
    """Each ``#   snakemake ...`` line of an overlay's header, read by Snakemake's own
    argument parser: it overlays the file, and its targets are studies of the merged config
    or files under results/<study>/ of one (a ``--config`` after ``--`` would be read as two
    more targets)."""
    from snakemake.cli import get_argument_parser

    lines = [
        ln[1:].strip() for ln in path.read_text().splitlines() if ln.startswith("#   snakemake ")
    ]
    assert lines, f"{path.name}: no '#   snakemake ...' command in the header"
    studies = set(_merged(path)["studies"])
    for line in lines:
        args = get_argument_parser().parse_args(line.split()[1:])
        assert Path(f"configs/{path.name}") in args.configfile, line
        names = {t.split("/")[1] if t.startswith("results/") else t for t in args.targets}
        assert args.targets and names <= studies | {"reproduce", "all", "claims_sweep"}, line
        assert args.config in (None, ["data_root=DIR"]), line


@pytest.mark.parametrize("name", sorted(OVERLAY))
def test_size_override_changes_sizes_only(name):
    """Against config.yaml + the paper overlay (both validated, defaults filled in), the size
    override changes only SIZE_KEYS, shortens only GRID_KEYS (keeping the overlay's values)
    and selects the study."""
    paper = _leaves(_merged(OVERLAYS / f"{name}.yaml"))
    smoke = _leaves(_merged(OVERLAYS / f"{name}.yaml", SMOKE / f"{name}.yaml"))
    changed = {p for p in paper.keys() | smoke.keys() if paper.get(p, None) != smoke.get(p, None)}
    assert changed, "the size override changes nothing"
    for path in sorted(changed, key=str):
        if path in SELECTION:
            continue
        key = "/".join(map(str, path))
        assert path in paper, f"{key}: the size override adds a key the paper config lacks"
        if path[-1] in GRID_KEYS and isinstance(paper[path], list):
            assert smoke[path] and set(smoke[path]) < set(paper[path]), (
                f"{key}: {smoke[path]} is not a shorter grid of the paper's {paper[path]}"
            )
        else:
            assert path[-1] in SIZE_KEYS, f"{key}: {paper[path]!r} -> {smoke[path]!r} is no size"
    assert smoke[("only_studies",)] == [OVERLAY[name].study]


def _check_outputs(work: Path, files: list[str]) -> None:
    """Every output of the study target exists and is well formed."""
    for f in files:
        path = work / f
        assert path.is_file() and path.stat().st_size > 0, f
        if f.endswith(".png"):
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f
        elif f.endswith(".pdf"):
            assert path.read_bytes()[:5] == b"%PDF-", f
        elif f.endswith(".csv"):
            assert len(pd.read_csv(path)) > 0, f


def _check_numbers(results: Path) -> None:
    """Training metrics are finite; attack summaries hold accuracies in [0, 1] that do not
    rise with the radius (worst case over the attacks)."""
    for f in results.rglob("metrics.json"):
        values = [v for v in json.loads(f.read_text()).values() if isinstance(v, int | float)]
        assert all(math.isfinite(v) for v in values), f
    for f in results.rglob("attack/*/**/summary.json"):
        s = json.loads(f.read_text())
        assert 0.0 <= s["clean_acc"] <= 1.0, f
        for accs in s["robust_acc"].values():
            assert all(0.0 <= a <= 1.0 for a in accs.values()), f
    for f in results.rglob("attack/*/**/robust_accuracy.csv"):
        t = pd.read_csv(f)
        worst = t[t.attack == "worst"].sort_values("eps").robust_acc
        assert len(worst) and worst.is_monotonic_decreasing, f


def _state(path: Path) -> dict:
    if path.suffix == ".npz":
        import numpy as np

        with np.load(path) as z:
            return {k: z[k] for k in z.files}  # arrays (names too): only shapes are read
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if path.name == "checkpoints.pt":  # checkpoint name -> {..., "state_dict": ...}
        saved = saved["final"]
    return saved.get("state_dict", saved)  # the generic model.pt: {"kind", ..., "state_dict"}


def _cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@pytest.mark.parametrize("name", sorted(OVERLAY))
def test_paper_overlay_runs_end_to_end(name, tmp_path):
    from ops_helpers import record

    from ibrobust.claims.core import NOT_RUN, VERDICTS
    from ibrobust.ledger.table import build_ledger
    from ibrobust.ledger.table import study_outputs as ledger_studies
    from ibrobust.studies import study_outputs

    ov = OVERLAY[name]
    root = tmp_path / "data"
    root.mkdir()
    if ov.mnist:
        fake_mnist(root, per_class=(40, 10))  # 400 train, 100 test images, 28 x 28
    work = tmp_path / "work"
    work.mkdir()
    configs = (OVERLAYS / f"{name}.yaml", SMOKE / f"{name}.yaml")
    cpu0 = _cpu_seconds()
    run = snakemake(
        work,
        "--config",
        f"data_root={root}",
        "--cores",
        "2",
        "--",
        ov.study,
        LEDGER,
        configfiles=configs,
        timeout=3600,
    )
    cpu = _cpu_seconds() - cpu0
    jobs = finished_rules(run)
    record(
        f"paper overlay smoke {name}: {cpu:.0f} CPU-s, {run.seconds:.0f} s wall, "
        f"{sum(jobs.values())} jobs"
    )
    assert run.returncode == 0, run.describe()

    missing = set(ov.rules) - set(jobs)
    assert not missing, f"rules that did not run: {missing}\n{run.describe()}"
    cfg = _merged(*configs, data_root=str(root))
    _check_outputs(work, study_outputs(cfg, ov.study))
    results = work / "results" / ov.study
    _check_numbers(results)

    file, key, shape = ov.arch
    assert tuple(_state(results / file)[key].shape) == shape, file

    ledger = pd.read_csv(work / LEDGER)
    ours = ledger[ledger.study == ov.study]
    assert len(ours) and set(ours.verdict) <= set(VERDICTS), ours
    assert (ours.verdict != NOT_RUN).any(), ours[["id", "verdict", "reason"]].to_string()
    assert (ledger[ledger.study != ov.study].verdict == NOT_RUN).all()  # not in only_studies
    # The ledger job reads the default target's outputs (PRELU: the synthetic half); the
    # same ledger over every file `snakemake <study>` built (PRELU's Table 1 too) measures
    # every claim whose source the study target makes: no source is absent or malformed.
    on_disk = build_ledger(ledger_studies(cfg, results=work / "results"))
    on_disk = on_disk[on_disk.study == ov.study]
    absent = on_disk[on_disk.reason.str.startswith("output absent", na=False)]
    assert absent.empty, absent[["id", "reason"]].to_string()
