"""A signal to the snakemake process alone stops the run within seconds (issue 30).

``kill -INT PID``, ``kill -TERM PID``, or SIGINT then SIGTERM, of snakemake - what a
process supervisor or a batch system sends - while two training jobs run: snakemake exits
within 10 s of the first signal, no job process is left, no MLflow run stays RUNNING (the
jobs' runs end FAILED or KILLED, the parent run KILLED), and Snakemake's metadata knows
every job: the interrupted ones are neither complete nor marked incomplete, the finished
ones are complete. Once on an idle machine and once beside a CPU load the test makes
itself (the last hang of this kind appeared only under load). A second test has a job
finish while the run stops: it stays complete.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from ops_helpers import (
    SLOW_TRAIN_LOG,
    incomplete_markers,
    processes_of,
    record,
    start_slow_run,
    wait_for_first_step,
    wait_until,
)
from smk_helpers import (
    PYTHON,
    REPO,
    base_env,
    copy_state,
    parse_dry_run,
    snakemake,
    snakemake_args,
)

pytestmark = pytest.mark.workflow

STOP_BOUND = 10.0  # s from the signal to snakemake's exit: the bound
SEEDS = (0, 1)
DATA = [f"results/datasets/tiny_clusters/seed{s}/data.npz" for s in SEEDS]
RUN = "results/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed{}"
TARGETS = [f"{RUN.format(s)}/model.pt" for s in SEEDS]


@contextmanager
def cpu_load(n: int) -> Iterator[None]:
    """``n`` busy-loop processes for the duration of the block (then killed)."""
    procs = [subprocess.Popen([PYTHON, "-c", "while True: pass"]) for _ in range(n)]
    try:
        if procs:
            time.sleep(2.0)  # running, not starting, when the block's body begins
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def stop(proc: subprocess.Popen, *sigs: signal.Signals) -> float:
    """Send ``sigs`` to the snakemake process alone, 0.5 s apart (a supervisor that follows
    up its SIGINT with SIGTERM); seconds from the first until it exited."""
    t0 = time.monotonic()
    for i, sig in enumerate(sigs):
        if i:
            time.sleep(0.5)
        if proc.poll() is None:
            os.kill(proc.pid, sig)
    try:
        proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        pass  # measured below; the caller's finally kills the group
    return time.monotonic() - t0


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    """A working dir where the two datasets the training jobs read are built."""
    work = tmp_path_factory.mktemp("stop_datasets")
    snakemake(work, "--cores", "2", *DATA, timeout=1800).check()
    return work


@pytest.mark.parametrize("load", [0, os.cpu_count() or 2], ids=["idle", "beside-cpu-load"])
@pytest.mark.parametrize(
    "sigs",
    [(signal.SIGINT,), (signal.SIGTERM,), (signal.SIGINT, signal.SIGTERM)],
    ids=lambda sigs: "+".join(s.name for s in sigs),
)
def test_a_signal_to_snakemake_alone_stops_its_jobs_within_seconds(datasets, tmp_path, sigs, load):
    from mlflow.tracking import MlflowClient

    work = copy_state(datasets, tmp_path / "work")
    proc, out, err = start_slow_run(work, TARGETS, cores=2)
    logs = [work / SLOW_TRAIN_LOG.format(s) for s in SEEDS]
    try:
        wait_for_first_step(proc, logs, 1800, err)  # a busy machine: torch's import takes minutes
        jobs = [p for p in processes_of(work) if ".snakemake/scripts/" in p]
        assert len(jobs) == len(SEEDS), jobs
        with cpu_load(load):
            seconds = stop(proc, *sigs)
            left = processes_of(work)  # at once: snakemake is gone, so must its jobs be
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    stderr = err.read_text()
    sent = "+".join(s.name for s in sigs)
    assert seconds <= STOP_BOUND, f"snakemake exited {seconds:.1f} s after {sent}\n{stderr}"
    assert proc.returncode == 1, stderr  # Snakemake's status for a run that did not finish
    assert not left, left
    assert f"ibrobust: {sigs[0].name}: stopping the run" in stderr

    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'results/mlflow/mlflow.db'}")
    exp = client.get_experiment_by_name("ibrobust")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    assert not [r.info.run_name for r in runs if r.info.status == "RUNNING"], runs
    trains = [r for r in runs if r.data.tags.get("ibrobust.rule") == "train"]
    assert {r.info.status for r in trains} <= {"FAILED", "KILLED"}, trains
    assert len(trains) == len(SEEDS)  # both were in their loop: both had opened a run
    parents = Counter(r.info.status for r in runs if r.data.tags["ibrobust.kind"] == "workflow")
    assert parents == Counter(FINISHED=1, KILLED=1), parents  # the datasets' run, this one

    # never half-known: the interrupted jobs' outputs are gone and not marked incomplete;
    # the datasets (complete before) are not redone
    assert not incomplete_markers(work)
    assert not [t for t in TARGETS if (work / t).exists()]
    plan = parse_dry_run(snakemake(work, "-n", *TARGETS, timeout=300))
    assert plan.rules() == Counter(train=len(SEEDS)), plan.rules()
    assert all(j.reason.startswith("Missing output files") for j in plan.jobs), plan.jobs
    record(
        f"{sent} to snakemake alone ({load} busy processes beside): exited "
        f"{seconds:.1f} s later, no job process left, train runs "
        f"{sorted(r.info.status for r in trains)}, parent KILLED, no incomplete marker"
    )


STOPPING = """
import sys

sys.path.insert(0, {scripts!r})
import _signals


onstart:
    _signals.stop_jobs_on_signal(workflow)


onerror:
    _signals.exit_without_teardown()


rule all:
    input:
        "finishing.txt",
        "interrupted.txt",


# ends 3 s after both jobs run, ignoring SIGINT as a Job does once its block has ended
rule finishing:
    output:
        "finishing.txt",
    shell:
        "trap '' INT; until [ -e interrupted.started ]; do sleep 0.1; done; "
        "echo $$ > finishing.started; sleep 3; echo done > {{output}}"


rule interrupted:
    output:
        "interrupted.txt",
    shell:
        "echo $$ > interrupted.started; exec sleep 600"
"""


def test_a_job_that_finishes_while_the_run_stops_stays_complete(tmp_path):
    """Before, Snakemake never post-processed a job that ended after the signal: its outputs
    stayed marked incomplete and the next run redid it."""
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text(STOPPING.format(scripts=str(REPO / "workflow_scripts")))
    work = tmp_path / "work"
    work.mkdir()
    err = tmp_path / "stderr.txt"
    with err.open("w") as fe:
        proc = subprocess.Popen(
            snakemake_args(work, "--cores", "2", snakefile=snakefile, configfiles=()),
            cwd=work,
            env=base_env(),
            stdout=fe,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(
            lambda: (
                all((work / f"{r}.started").exists() for r in ("finishing", "interrupted"))
                or proc.poll() is not None
            ),
            300,
            "both jobs to start",
        )
        assert proc.poll() is None, err.read_text()
        pids = [int((work / f"{r}.started").read_text()) for r in ("finishing", "interrupted")]
        seconds = stop(proc, signal.SIGINT)
        left = [pid for pid in pids if alive(pid)]
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    output = err.read_text()
    assert seconds <= STOP_BOUND, f"snakemake exited {seconds:.1f} s after SIGINT\n{output}"
    assert not left, left
    assert "(Rule: finishing)" in output, output  # Snakemake post-processed it
    assert (work / "finishing.txt").read_text() == "done\n"
    assert not (work / "interrupted.txt").exists()
    assert not incomplete_markers(work)
    plan = parse_dry_run(snakemake(work, "-n", snakefile=snakefile, configfiles=(), timeout=120))
    assert plan.rules() == Counter(interrupted=1, all=1), plan.rules()
