"""A job killed mid-way leaves no output that a later run could take for a result."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter

import pytest
from smk_helpers import (
    TINY,
    base_env,
    finished_rules,
    parse_dry_run,
    snakemake,
    snakemake_args,
    write_yaml,
)

pytestmark = pytest.mark.workflow

RUN = "results/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed0"
LOG = "results/logs/train/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed0.log"


def _wait_for(predicate, proc, timeout, what, out, err):
    t0 = time.monotonic()
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(
                f"snakemake exited ({proc.returncode}) before {what}\n"
                f"{out.read_text()}\n{err.read_text()}"
            )
        if time.monotonic() - t0 > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"timed out waiting for {what}\n{err.read_text()}")
        time.sleep(0.2)


def test_killed_train_job_leaves_no_output(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    # ~1e6 GD steps (about a minute and a half on d=40), far longer than we wait
    slow = write_yaml(
        tmp_path / "slow.yaml",
        {
            "mlflow": {"enabled": False},
            "optimizers": {"gd_tiny": {"max_steps": 10**6, "stop_loss": 1.0e-30}},
        },
    )
    configs = (TINY, slow)
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with out.open("w") as fo, err.open("w") as fe:
        proc = subprocess.Popen(
            snakemake_args(work, "--cores", "1", f"{RUN}/model.pt", configfiles=configs),
            cwd=work,
            env=base_env(),
            stdout=fo,
            stderr=fe,
            start_new_session=True,  # its own process group: snakemake + the job
        )
    log = work / LOG
    try:
        # the train job is under way once its log shows a progress line (first step)
        _wait_for(
            lambda: log.is_file() and "progress " in log.read_text(),
            proc,
            240,
            "the train job's first logged step",
            out,
            err,
        )
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
    # every process of the group (the job's python included) is gone
    t0 = time.monotonic()
    while True:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() - t0 < 30, "processes of the killed group survive"
        time.sleep(0.2)

    run_dir = work / RUN
    assert (work / "results/datasets/tiny_clusters/seed0/data.npz").is_file()  # finished
    assert not (run_dir / "model.pt").exists()
    assert not (run_dir / "history.csv").exists()
    # a temporary file of an interrupted atomic write never has an output's name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / ".model.pt.abc123.tmp.pt").write_bytes(b"half a model")
    assert {p.name for p in run_dir.iterdir()} <= {".model.pt.abc123.tmp.pt"}

    # the next (dry) run plans the interrupted job again, and only it
    dry = snakemake(work, "-n", f"{RUN}/model.pt", configfiles=configs, timeout=120)
    plan = parse_dry_run(dry)
    assert plan.stats == Counter(train=1), dry.describe()
    job = plan.of("train")[0]
    assert job.wildcards["supervision"] == "binary" and job.wildcards["seed"] == "0"
    assert "Missing output files" in job.reason or "Incomplete" in job.reason, job.reason

    # and the plain tiny config completes it (after removing the killed run's lock)
    snakemake(work, "--unlock", configfiles=(TINY, slow), timeout=120).check()
    fast = write_yaml(tmp_path / "fast.yaml", {"mlflow": {"enabled": False}})
    done = snakemake(work, "--cores", "1", f"{RUN}/model.pt", configfiles=(TINY, fast))
    assert finished_rules(done.check()) == Counter(train=1)
    assert (run_dir / "model.pt").stat().st_size > 0
