"""The tiny config submitted through profiles/slurm to a real (local, single-node) SLURM
cluster, logging over HTTP to the run's own tracking server: every job ran as a SLURM job
(its id in the job's log, in its MLflow run's tags and known to slurmctld), and the
outputs equal those of the local run of the same config."""

from __future__ import annotations

import io
import re
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from ops_helpers import record, require_slurm, slurm_job_ids
from smk_helpers import EXPECTED_JOBS, REPO, TINY, finished_rules, snakemake

pytestmark = pytest.mark.workflow

# The cluster's own settings (not the workflow's), given on the command line as a user of
# such a cluster would: no accounting (no account, status from squeue), and a short first
# status check since jobs take seconds here.
SITE = [
    "--slurm-no-account",
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "2",
]
SKIP_DIRS = {"logs", "benchmarks", "mlflow"}


def _outputs(results: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(results)): p
        for p in results.rglob("*")
        if p.is_file() and p.relative_to(results).parts[0] not in SKIP_DIRS
    }


def _same(a: Path, b: Path) -> bool:
    if a.suffix == ".pdf":  # embeds its creation time; the PNG of the same figure is compared
        return True
    if a.suffix == ".npz":
        x, y = np.load(a), np.load(b)
        return sorted(x.files) == sorted(y.files) and all(
            np.array_equal(x[k], y[k], equal_nan=True) for k in x.files
        )
    if a.suffix == ".pt":
        x = torch.load(io.BytesIO(a.read_bytes()), weights_only=False)
        y = torch.load(io.BytesIO(b.read_bytes()), weights_only=False)
        return x.keys() == y.keys() and all(
            torch.equal(x[k], y[k]) if torch.is_tensor(x[k]) else x[k] == y[k] for k in x
        )
    return a.read_bytes() == b.read_bytes()


def test_tiny_config_through_the_slurm_profile(tiny_run, tmp_path):
    require_slurm()
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    profile = str(REPO / "profiles" / "slurm")
    run = snakemake(work, "--profile", profile, *SITE, configfiles=(TINY,), timeout=2400)
    assert run.returncode == 0, run.describe()
    assert re.search(rf"Using profiles? {re.escape(profile)}", run.output), run.output[:2000]

    # every job but the target `all` and the local rules (the figures and the ledger: seconds
    # of work, run in the snakemake process, `localrules:` in rules/) ran as its own SLURM job
    ran = finished_rules(run)
    assert ran == EXPECTED_JOBS, ran
    local = Counter(re.findall(r"^localrule (\w+):", run.output, re.M)) - Counter(all=1)
    assert set(local) == {"fa_figures", "fa_lambda_figure", "fa_scaling_figure", "claims"}, local
    submitted = slurm_job_ids(run.output)
    jobs = sum(ran.values()) - ran["all"] - sum(local.values())
    assert len(submitted) == jobs and len(set(submitted.values())) == jobs, submitted
    ids = set(submitted.values())

    # ... its id is in the job's log (first line) ...
    logged, unsubmitted = {}, 0
    for log in (work / "results" / "logs").rglob("*.log"):
        # run names have spaces ("train seed0/... @fa"): the name runs up to " threads="
        m = re.search(r" start (.+?) threads=.*slurm_job_id=(\d+)", log.read_text().splitlines()[0])
        if m is None:  # a local rule's job
            unsubmitted += 1
            continue
        logged[m.group(1)] = m.group(2)
    assert unsubmitted == sum(local.values()), unsubmitted
    assert sorted(logged.values()) == sorted(ids), (sorted(logged.values()), sorted(ids))

    # ... slurmctld knows it as completed ...
    for job_id in ids:
        info = subprocess.run(
            ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True
        ).stdout
        assert "JobState=COMPLETED" in info, info

    # ... and its MLflow run (made by the snakemake process from the job's run record, which
    # the node wrote beside the job's log on the shared disk) carries it as a tag
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'results/mlflow/mlflow.db'}")
    exp = client.get_experiment_by_name("ibrobust")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    (parent,) = [r for r in runs if r.data.tags["ibrobust.kind"] == "workflow"]
    children = [r for r in runs if r.data.tags["ibrobust.kind"] == "job"]
    assert parent.info.status == "FINISHED"
    assert Counter(r.data.tags["ibrobust.rule"] for r in children) == ran - Counter(all=1)
    by_name = {r.info.run_name: r.data.tags.get("slurm.job_id") for r in children}
    assert sum(v is None for v in by_name.values()) == sum(local.values()), by_name
    assert {k: v for k, v in by_name.items() if v is not None} == logged
    for r in children:
        assert r.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert r.info.status == "FINISHED"

    # the outputs equal those of the local run of the same config
    mine, local = _outputs(work / "results"), _outputs(tiny_run.results)
    assert sorted(mine) == sorted(local)
    differ = [k for k in sorted(mine) if not _same(mine[k], local[k])]
    assert not differ, differ

    per_job = (run.seconds - tiny_run.run.seconds) / jobs
    record(
        f"SLURM tiny run: {jobs} jobs in {run.seconds:.1f} s vs local --cores 2: {tiny_run.run.seconds:.1f} s -> {per_job:+.1f} s per job"
    )
