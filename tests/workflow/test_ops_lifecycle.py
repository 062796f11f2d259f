"""A killed snakemake needs Snakemake's own ``--unlock`` and nothing else: ``kill -9`` of the
snakemake process alone (no handler of it runs) while two training jobs run; its jobs end
by themselves, the next run stops at Snakemake's lock with Snakemake's message naming
``--unlock``, and after ``snakemake --unlock`` a plain rerun ends the dead invocation's
MLflow runs KILLED (its run records have no end, their writers are gone) and logs every
result once."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import pytest
from ops_helpers import (
    SLOW_TRAIN_LOG,
    processes_of,
    record,
    start_slow_run,
    wait_for_first_step,
    wait_until,
)
from smk_helpers import TINY, finished_rules, snakemake

pytestmark = pytest.mark.workflow

RUN = "results/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed{}"
SEEDS = (0, 1)
TARGETS = [f"{RUN.format(s)}/model.pt" for s in SEEDS]
ORPHAN_GRACE = 10.0  # s: the bound for the dead invocation's jobs to be gone


def test_killed_snakemake_needs_only_unlock_and_a_rerun(tmp_path):
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    proc, out, err = start_slow_run(work, TARGETS, cores=2)
    logs = [work / SLOW_TRAIN_LOG.format(s) for s in SEEDS]
    try:
        wait_for_first_step(proc, logs, 600, err)
        os.kill(proc.pid, signal.SIGKILL)  # snakemake alone: its jobs are not signalled
        proc.wait(timeout=30)
        t0 = time.monotonic()
        wait_until(lambda: not processes_of(work), ORPHAN_GRACE, "the killed run's jobs to end")
        orphans_gone = time.monotonic() - t0
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    said = err.read_text().count(f"the snakemake process of this job (pid {proc.pid} on ")
    assert said == len(SEEDS), err.read_text()  # each job said why it ended
    locks = sorted(p.name for p in (work / ".snakemake/locks").iterdir())
    assert locks, "the killed run left no lock to clean up"

    locked = snakemake(work, "--cores", "2", *TARGETS, configfiles=(TINY,), timeout=300)
    assert locked.returncode != 0 and "--unlock" in locked.stderr, locked.describe()
    snakemake(work, "--unlock", *TARGETS, configfiles=(TINY,), timeout=300).check()
    rerun = snakemake(work, "--cores", "2", *TARGETS, configfiles=(TINY,), timeout=900)
    assert rerun.returncode == 0, rerun.describe()
    assert finished_rules(rerun) == Counter(train=2), rerun.describe()  # data was complete

    from mlflow.entities import ViewType

    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'results/mlflow/mlflow.db'}")
    exp = client.get_experiment_by_name("ibrobust")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    assert not [r.info.run_name for r in runs if r.info.status == "RUNNING"]
    parents = {r.info.run_id: r for r in runs if r.data.tags["ibrobust.kind"] == "workflow"}
    by_status = Counter(r.info.status for r in parents.values())
    assert by_status == Counter(KILLED=1, FINISHED=1), by_status
    (dead,) = [r for r in parents.values() if r.info.status == "KILLED"]
    jobs = [r for r in runs if r.data.tags["ibrobust.kind"] == "job"]
    # a job run closed KILLED is replaced (soft-deleted) once the rerun's run of the same
    # result (tag ibrobust.run_key) finishes: look at deleted runs too
    every = client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, max_results=1000)
    killed = [
        r for r in every if r.data.tags.get("ibrobust.kind") == "job" and r.info.status == "KILLED"
    ]
    finished_keys = {r.data.tags["ibrobust.run_key"] for r in jobs if r.info.status == "FINISHED"}
    assert all(
        r.info.lifecycle_stage == "active" or r.data.tags["ibrobust.run_key"] in finished_keys
        for r in killed
    ), "a killed job run was deleted without a finished run of the same result"
    # the training runs the dead invocation had synced (a record the rerun overwrote before
    # it was synced is lost with it: the rerun logs that result)
    assert {r.data.tags["ibrobust.rule"] for r in killed} <= {"train"}, killed
    assert all(r.data.tags["mlflow.parentRunId"] == dead.info.run_id for r in killed)
    # every result logged once: one FINISHED run per job (2 datasets, 2 models)
    finished = Counter(r.info.run_name for r in jobs if r.info.status == "FINISHED")
    assert len(finished) == 4 and set(finished.values()) == {1}, finished
    assert not processes_of(work)
    record(
        f"kill -9 of snakemake: its jobs gone {orphans_gone:.1f} s later; --unlock, rerun "
        f"{rerun.seconds:.1f} s, 1 parent + {len(killed)} job runs closed KILLED"
    )


def test_a_job_killed_with_9_ends_killed_and_its_rerun_replaces_it(tmp_path):
    """``kill -9`` of one training job: Snakemake reports it failed, the run's last sync
    ends its run KILLED (its record has no end), none stays RUNNING; the rerun's FINISHED run
    of the same result replaces it."""
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    proc, out, err = start_slow_run(work, TARGETS[:1], cores=1)
    log = work / SLOW_TRAIN_LOG.format(0)
    try:
        wait_for_first_step(proc, [log], 600, err)
        (job,) = [p.split(":")[0] for p in processes_of(work) if "train.py" in p]
        os.kill(int(job), signal.SIGKILL)
        proc.wait(timeout=300)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 1, err.read_text()
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'results/mlflow/mlflow.db'}")
    exp = client.get_experiment_by_name("ibrobust")

    def status() -> Counter:
        runs = client.search_runs([exp.experiment_id], "tags.`ibrobust.rule` = 'train'")
        return Counter(r.info.status for r in runs)

    assert status() == Counter(KILLED=1), err.read_text()[-3000:]
    rerun = snakemake(work, "--cores", "1", *TARGETS[:1], configfiles=(TINY,), timeout=900)
    assert rerun.returncode == 0 and finished_rules(rerun) == Counter(train=1), rerun.describe()
    assert status() == Counter(FINISHED=1)
    record("kill -9 of a training job: its run KILLED at the run's end; the rerun replaced it")
