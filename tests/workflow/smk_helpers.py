"""Helpers for the end-to-end workflow tests: run Snakemake, parse what it plans and ran.

How planned jobs are read (robust across Snakemake 9.x):

* ``snakemake -n`` prints one block per planned job to stdout::

      rule attack:                  (or "localrule all:")
          input: ...
          reason: Params have changed since last execution: ...
          wildcards: study=fa, dataset=tiny_clusters, ..., grid=main

  followed by a ``Job stats:`` table (``rule  count`` lines, then ``total N``).
  :func:`parse_dry_run` reads both and checks that they agree, so a change in either
  format fails loudly instead of silently matching nothing.
* A real run logs ``Finished jobid: N (Rule: NAME)`` once per finished job (stderr);
  :func:`finished_rules` counts those.
* When nothing is planned, Snakemake prints ``Nothing to be done`` and no table.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"
TINY = Path(__file__).resolve().parent / "configs" / "tiny.yaml"
PYTHON = sys.executable

# What a copy of the workflow needs (src only when the library itself is edited).
REPO_FILES = [
    "Snakefile",
    "rules",
    "workflow_scripts",
    "schemas",
    "config.yaml",
    "envs",
    "profiles",
    "report",
    "docs/ledger/preregistration.csv",  # the ledger's "revised after the result" notes
]

# Every declared output of Study FA (rules/targets.smk: study_outputs("fa")).
FIGURES = [
    "cosine_heatmaps",
    "lambda_trajectories",
    "robust_accuracy_vs_radius",
    "margin_gradient",
]
FIGURES_WITH_SCALING = [*FIGURES, "critical_radius_scaling"]
READOUTS = ["sum", "argmax", "log_odds"]  # config.yaml's fa.readouts (tiny.yaml keeps them)

# Jobs of the tiny config (tests/workflow/configs/tiny.yaml, overlaid on config.yaml),
# derived by hand:
#   Study fa = 1 dataset (tiny_clusters, d=40 k=4) x 1 model x 1 optimizer
#              x 2 supervisions (binary, multiclass) x 2 seeds (0, 1); reference
#              robust_reference (optimizer "handbuilt", supervision binary) per seed;
#              the k-class nets are read through 3 binary readouts (sum, argmax, log_odds).
#   Scaling sweeps over k in [2, 4] and d in [20, 40], seeds [0]: k=4 and d=40 are the base
#              dataset itself (its jobs are reused); "tiny_clusters@k=2" and
#              "tiny_clusters@d=20" are the variants.
#   dataset: tiny_clusters seeds 0, 1 + the two variants, seed 0                  =  4
#   train:  main: 2 sup x 2 seeds = 4 trained + 2 references                      =  6
#           scaling: 3 datasets x seed 0 x (2 trained + 1 reference) = 9, of which
#           the 3 on tiny_clusters seed 0 are the main runs already               = +6 -> 12
#   analyze: cosines of every trained (not reference) main run (summary table; the
#           cosine figure needs the seed-0 subset)                                 =  4
#   decompose: lambda decomposition of the same 4 two-layer runs, + the sweep's nets
#           where it is defined (scaling.decompose, n_train <= d): tiny_clusters@k=2
#           (n = d = 40) x 2 supervisions x seed 0; not @d=20 (n = 40 > d)        =  6
#   attack (a model's own score: 2-class nets and references): grid main 2 + 2;
#           grid scaling 3 datasets x (1 + 1)                                      = 10
#   attack_readouts_fa (k-class nets, one job for all 3 readouts): grid main 2
#           seeds; grid scaling 3 datasets                                         =  5
#   fa_figures (cosine heatmaps, robust curves, summary), fa_lambda_figure,
#   fa_scaling_figure, fa_margin_gradient: one each for study fa                   =  4
#   fa_refine (config.yaml's refine: the 2-class nets' radii bisected): grid main
#           2 seeds x (worst, universal); grid scaling 3 datasets x seed 0 x worst     =  7
#   claims: the claims ledger over the study's summaries                           =  1
#   all                                                                            =  1
#   total                                                                          = 54
EXPECTED_JOBS = Counter(
    dataset=4,
    train=12,
    analyze=4,
    decompose=6,
    attack=10,
    attack_readouts_fa=5,
    fa_figures=1,
    fa_lambda_figure=1,
    fa_scaling_figure=1,
    fa_margin_gradient=1,
    fa_refine=7,
    claims=1,
    all=1,
)

FIGURE_RULES = [
    "fa_figures",
    "fa_lambda_figure",
    "fa_scaling_figure",
    "fa_margin_gradient",
]


@dataclass
class Run:
    args: list[str]
    cwd: Path
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + "\n" + self.stderr

    def describe(self) -> str:
        return (
            f"$ {' '.join(self.args)}\n(cwd {self.cwd}, exit {self.returncode}, "
            f"{self.seconds:.1f} s)\n--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )

    def check(self) -> Run:
        assert self.returncode == 0, self.describe()
        return self


def base_env(**extra: str) -> dict[str, str]:
    """The test process's environment, minus anything that would redirect the workflow.

    ``PYTHONPATH`` starts with this tree's src/, so the Snakefile and the jobs import the
    library next to the Snakefile under test (the same as the editable install in the
    repository itself); ``extra`` may override it (library-edit tests point at a copy).
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "MLFLOW_TRACKING_URI" and not k.startswith("IBROBUST_")
    }
    env["PATH"] = str(Path(PYTHON).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    env.update(extra)
    return env


def snakemake_args(
    workdir: Path,
    *args: str,
    snakefile: Path = SNAKEFILE,
    configfiles: tuple[Path, ...] = (TINY,),
) -> list[str]:
    cmd = [PYTHON, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir), "--nocolor"]
    if configfiles:
        cmd += ["--configfile", *map(str, configfiles)]
    return cmd + list(args)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def snakemake(
    workdir: Path,
    *args: str,
    snakefile: Path = SNAKEFILE,
    configfiles: tuple[Path, ...] = (TINY,),
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> Run:
    """Run snakemake in its own process group; on timeout kill the group (jobs included)."""
    cmd = snakemake_args(workdir, *args, snakefile=snakefile, configfiles=configfiles)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=workdir,
        env=env or base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        run = Run(cmd, workdir, -9, out, err, time.monotonic() - t0)
        raise AssertionError(f"snakemake timed out after {timeout} s\n" + run.describe()) from None
    return Run(cmd, workdir, proc.returncode, out, err, time.monotonic() - t0)


# ---- parsing ---------------------------------------------------------------------------
@dataclass
class PlannedJob:
    rule: str
    wildcards: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    output: list[str] = field(default_factory=list)
    input: list[str] = field(default_factory=list)


@dataclass
class Plan:
    jobs: list[PlannedJob]
    stats: Counter  # rule -> count, from the "Job stats" table (without "total")
    nothing_to_do: bool

    def rules(self) -> Counter:
        return Counter(j.rule for j in self.jobs)

    def of(self, rule: str) -> list[PlannedJob]:
        return [j for j in self.jobs if j.rule == rule]


_RULE_LINE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):\s*$")
_FIELD_LINE = re.compile(r"^\s+(\w+): (.*)$")


def parse_dry_run(run: Run) -> Plan:
    """Jobs (rule, wildcards, reason, output, input) and the Job stats table of a ``snakemake -n``
    run."""
    assert run.returncode == 0, run.describe()
    text = run.stdout
    jobs: list[PlannedJob] = []
    current: PlannedJob | None = None
    for line in text.splitlines():
        m = _RULE_LINE.match(line)
        if m:
            current = PlannedJob(m.group(1))
            jobs.append(current)
            continue
        f = _FIELD_LINE.match(line)
        if current is not None and f:
            key, value = f.groups()
            if key == "wildcards":
                current.wildcards = dict(kv.split("=", 1) for kv in value.split(", "))
            elif key == "reason":
                current.reason = value
            elif key in ("output", "input"):
                setattr(current, key, value.split(", "))
        elif not line.strip() or line.startswith(("[", "Job stats")):
            current = None
    stats: Counter = Counter()
    if "Job stats:" in text:
        table = text.split("Job stats:", 1)[1].splitlines()
        # "job  count" header, a dashed rule, then "name  count" rows until "total  N"
        for row in table[3:]:
            parts = row.split()
            if len(parts) != 2:
                break
            name, count = parts
            if name == "total":
                assert int(count) == sum(stats.values()), text
                break
            stats[name] = int(count)
    nothing = "Nothing to be done" in run.output
    plan = Plan(jobs, stats, nothing)
    # the two views of the plan must agree (guards against format changes)
    assert plan.rules() == stats, f"job blocks {plan.rules()} != Job stats {stats}\n{text}"
    assert nothing == (not jobs), run.describe()
    return plan


def plan_and_run(work: Path, configfile: Path, *args: str, label: str) -> tuple[Plan, Run]:
    """Dry-run then run (2 cores) ``args`` on ``configfile`` in ``work``; a failed run
    fails the calling fixture with Snakemake's output."""
    import pytest

    plan = parse_dry_run(snakemake(work, "-n", *args, configfiles=(configfile,), timeout=120))
    run = snakemake(work, "--cores", "2", *args, configfiles=(configfile,), timeout=1200)
    print(f"tiny {label} workflow: {run.seconds:.1f} s")
    if run.returncode != 0:
        pytest.fail(f"the tiny {label} workflow failed\n" + run.describe(), pytrace=False)
    return plan, run


def fake_images(path: Path, n_train: int = 300, n_test: int = 100, seed: int = 0) -> None:
    """10 classes of 8x8 grey images: class c lights row c % 8 (columns by c // 8) on noise."""
    rng = np.random.default_rng(seed)

    def split(n):
        y = np.arange(n) % 10
        x = rng.integers(0, 60, size=(n, 8, 8)).astype(np.uint8)
        for i, c in enumerate(y):
            cols = slice(0, 4) if c < 8 else slice(4, 8)
            x[i, c % 8, cols] = 230
        return x, y.astype(np.int64)

    x_train, y_train = split(n_train)
    x_test, y_test = split(n_test)
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


def idx_bytes(a: np.ndarray) -> bytes:
    """An IDX file of the uint8 array ``a``: magic 00 00 08 ndim, big-endian sizes, items."""
    head = bytes([0, 0, 0x08, a.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in a.shape)
    return head + a.astype(np.uint8).tobytes()


def fake_mnist(root: Path, per_class: tuple[int, int] = (40, 10), seed: int = 0) -> Path:
    """The four uncompressed IDX files torchvision's MNIST reads, under ``root/MNIST/raw``:
    ``per_class`` = (train, test) images of each digit, 28 x 28 like MNIST, shuffled (no
    class-sorted prefix). Digit c lights rows 2c + 4 and 2c + 5 (columns 4-23) on dim noise,
    so every digit, parity and pair is learnable in a few steps. Returns ``root``."""
    rng = np.random.default_rng(seed)
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, m in (("train", per_class[0]), ("t10k", per_class[1])):
        y = rng.permutation(np.repeat(np.arange(10), m)).astype(np.uint8)  # (N,)
        x = rng.integers(0, 60, size=(len(y), 28, 28), dtype=np.uint8)  # (N, 28, 28)
        for i, c in enumerate(y):
            x[i, 2 * c + 4 : 2 * c + 6, 4:24] = 230
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(idx_bytes(x))
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(idx_bytes(y))
    return root


def run_on_fake_images(
    tmp_path_factory, configfile: Path, *args: str, label: str
) -> tuple[Path, Path, Plan, Run]:
    """:func:`fake_images` as ``tiny_images.npz`` under a fresh data root, then
    :func:`plan_and_run` of ``args`` on ``configfile`` with ``data_root`` set to it:
    (work dir, data root, plan, run)."""
    root = tmp_path_factory.mktemp(f"{label}_data")
    fake_images(root / "tiny_images.npz")
    work = tmp_path_factory.mktemp(f"{label}_run")
    plan, run = plan_and_run(work, configfile, *args, "--config", f"data_root={root}", label=label)
    return work, root, plan, run


def finished_rules(run: Run) -> Counter:
    """Rules of the jobs a real run finished (``Finished jobid: N (Rule: NAME)``)."""
    return Counter(re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", run.output))


# ---- files -----------------------------------------------------------------------------
def copy_state(src: Path, dst: Path) -> Path:
    """Copy a finished working dir's results/ and .snakemake/ with ``cp -a`` (keeps mtimes)."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("results", ".snakemake"):
        subprocess.run(["cp", "-a", str(src / name), str(dst / name)], check=True)
    return dst


def copy_repo(dst: Path, with_src: bool = False) -> Path:
    """Copy the workflow (and optionally the library) to ``dst``; returns the Snakefile."""
    dst.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in REPO_FILES + (["src"] if with_src else []):
        s = REPO / name
        if s.is_dir():
            shutil.copytree(s, dst / name, ignore=ignore)
        else:
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, dst / name)
    return dst / "Snakefile"


def write_yaml(path: Path, obj: dict) -> Path:
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return path


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
