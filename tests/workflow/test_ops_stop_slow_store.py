"""A stop never deletes finished work, however slowly the tracking store answers (issues 39
and 44).

The store is a real ``mlflow server`` on SQLite behind a local proxy that holds every
request for DELAY s (``ops_helpers.SlowProxy``) once the first training job has started:
syncing one training run then takes about 20 s. Two training jobs run one after the other
(``--cores 1``). Once the first has written its outputs while its run is not yet in the
store, snakemake alone gets SIGINT. The job has logged ``done in`` by then (it never talks
to the store: its run record is a local file); it keeps its outputs, Snakemake marks them
complete (a dry run does not plan it again), the end of the run says how many runs are not
in the store and the command that syncs them, and that command (the same sync the run
does) brings every run to the store, none left RUNNING.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from ops_helpers import incomplete_markers, record, slow_proxy, tracking_server, wait_until
from smk_helpers import PYTHON, REPO, base_env, parse_dry_run, snakemake, snakemake_args

pytestmark = pytest.mark.workflow

# s the store takes for every request once the first training job has started: what is left
# of a training run when its job ends (~6 requests) outlasts the stop's 5 s wait for the runs
DELAY = 2.0
SEEDS = (0, 1)
RUN = "results/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed{}"
OUTPUTS = ("model.pt", "history.csv", "metrics.json")  # rule train's
TARGETS = [f"{RUN.format(s)}/model.pt" for s in SEEDS]
TRAIN_LOG = "results/logs/train/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed{}.log"
RUN_NAME = "train seed{}/binary/gd_tiny/two_layer_m2/tiny_clusters @fa"


def _log(work: Path, seed: int) -> str:
    path = work / TRAIN_LOG.format(seed)
    return path.read_text() if path.is_file() else ""


def _written(work: Path, seed: int) -> bool:
    """Every output of the seed's training job is there (written atomically: whole)."""
    return all((work / RUN.format(seed) / name).is_file() for name in OUTPUTS)


def test_a_stop_keeps_a_job_whose_run_the_store_is_still_writing(tmp_path):
    from mlflow.tracking import MlflowClient

    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "store").mkdir()
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with ExitStack() as stack:
        try:
            server = stack.enter_context(
                tracking_server(
                    f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}",
                    tmp_path / "artifacts",
                    tmp_path / "server.log",
                )
            )
        except Exception as error:  # noqa: BLE001 - whatever keeps `mlflow server` from starting
            pytest.skip(f"mlflow server could not start here: {error}")
        proxy = stack.enter_context(slow_proxy(server))
        store = MlflowClient(tracking_uri=server)  # the server itself: not slowed

        def in_store(seed: int) -> bool:
            """The seed's training run is in the store, FINISHED."""
            exp = store.get_experiment_by_name("ibrobust")
            if exp is None:
                return False
            name = RUN_NAME.format(seed)
            runs = store.search_runs([exp.experiment_id], f"attributes.run_name = '{name}'")
            return any(r.info.status == "FINISHED" for r in runs)

        with out.open("w") as fo, err.open("w") as fe:
            proc = subprocess.Popen(
                snakemake_args(work, "--cores", "1", *TARGETS),
                cwd=work,
                env=base_env(MLFLOW_TRACKING_URI=proxy.uri),
                stdout=fo,
                stderr=fe,
                start_new_session=True,  # a signal sent to it reaches snakemake alone
            )

        def ended() -> bool:
            return proc.poll() is not None

        def written_not_in_store() -> tuple[int | None] | None:
            """(seed,) of a training job whose outputs are written and its run not in the
            store; (None,) if snakemake ended first."""
            seeds = [s for s in SEEDS if _written(work, s) and not in_store(s)]
            return (seeds[0],) if seeds else (None,) if ended() else None

        try:
            wait_until(
                lambda: any(" start train " in _log(work, s) for s in SEEDS) or ended(),
                600,
                "the first training job to start",
            )
            proxy.delay = DELAY
            (seed,) = wait_until(written_not_in_store, 600, "outputs written, run not in the store")
            assert seed is not None, err.read_text()
            t_written = time.monotonic()
            try:  # milliseconds now; before, only once the store had the run
                wait_until(lambda: "done in" in _log(work, seed), 3, "done in", interval=0.05)
            except AssertionError:
                pass
            done_before = "done in" in _log(work, seed)
            since_written = time.monotonic() - t_written
            logged_before = in_store(seed)
            os.kill(proc.pid, signal.SIGINT)
            t0 = time.monotonic()
            proc.wait(timeout=180)
            seconds = time.monotonic() - t0
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        stderr = err.read_text()
        assert proc.returncode == 1, stderr  # Snakemake's status for a run that did not finish
        assert "ibrobust: SIGINT: stopping the run" in stderr

        # no job whose log says `done in` lost its outputs; Snakemake marks them complete
        done = [s for s in SEEDS if "done in" in _log(work, s)]
        assert not [s for s in done if not _written(work, s)], (done, stderr)
        assert seed in done and _written(work, seed), (_log(work, seed), stderr)
        assert done_before and not logged_before, (since_written, _log(work, seed))
        assert not incomplete_markers(work)
        plan = parse_dry_run(snakemake(work, "-n", *TARGETS, timeout=300))
        planned = {int(j.wildcards["seed"]) for j in plan.of("train")}
        assert planned == set(SEEDS) - set(done), plan.jobs

        # the runs not in the store are counted, and one command syncs them
        (summary,) = [ln for ln in stderr.splitlines() if "not yet in the store" in ln]
        assert summary.endswith("sync them with: ibrobust sync (or python "
                                "workflow_scripts/_tracking/sync.py)"), summary  # fmt: skip
        proxy.delay = 0.0
        replay = subprocess.run(
            [PYTHON, str(REPO / "workflow_scripts/_tracking/sync.py")],
            cwd=work,
            env=base_env(MLFLOW_TRACKING_URI=proxy.uri),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert replay.returncode == 0, replay.stdout + replay.stderr
        exp = store.get_experiment_by_name("ibrobust")
        runs = {r.info.run_name: r for r in store.search_runs([exp.experiment_id])}
        assert not [name for name, r in runs.items() if r.info.status == "RUNNING"], runs
        opened = {}  # every job that opened a run (its log's first line) -> did it finish?
        for log in (work / "results" / "logs").rglob("*.log"):
            text = log.read_text()
            if m := re.search(r" start (.+?) threads=\d+ mlflow=record", text):
                opened[m.group(1)] = "done in" in text
        assert RUN_NAME.format(seed) in opened
        for name, finished in opened.items():
            assert name in runs, (name, sorted(runs))
            expected = {"FINISHED"} if finished else {"FAILED", "KILLED"}
            assert runs[name].info.status in expected, name
    record(
        f"stop with a store taking {DELAY:g} s per request: train seed{seed} logged done in "
        f"{since_written * 1000:.0f} ms after its outputs, kept and complete; snakemake exited "
        f"{seconds:.1f} s after SIGINT; {summary.split(';')[0]} ({proxy.requests} slowed "
        f"requests); {replay.stdout.strip().splitlines()[-1]}"
    )
