"""workflow_scripts/_signals.py on real processes: which processes are a run's jobs, what a
stop does to them, and a job's SIGINT handling (the end-to-end stop of the workflow is
tests/workflow/test_ops_signals.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _lifecycle  # noqa: E402
import _signals  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


class FakeScheduler:
    """What a stop calls of Snakemake's scheduler."""

    def __init__(self) -> None:
        self.stops = 0

    def exit_gracefully(self) -> None:
        self.stops += 1


def _wait_for_child(root: int, pid: int) -> None:
    t0 = time.monotonic()
    while pid not in _signals.job_processes(root) and time.monotonic() - t0 < 10:
        time.sleep(0.05)


def test_the_jobs_are_children_and_their_descendants_but_not_a_session_leader():
    job = subprocess.Popen(["bash", "-c", "sleep 60 & wait"])  # a job and its child
    server = subprocess.Popen(["sleep", "60"], start_new_session=True)  # the tracking server
    found: list[int] = []
    try:
        t0 = time.monotonic()
        while len(found) < 2 and time.monotonic() - t0 < 10:
            found = _signals.job_processes()
            time.sleep(0.05)
        assert job.pid in found and server.pid not in found
        assert len(found) == 2, found
        (grandchild,) = [pid for pid in found if pid != job.pid]
        assert Path(f"/proc/{grandchild}/cmdline").read_bytes().startswith(b"sleep\0")
    finally:
        for pid in found:
            if pid != job.pid:
                os.kill(pid, signal.SIGKILL)  # the job's own sleep, by its pid
        for proc in (job, server):
            proc.kill()
            proc.wait()


def test_a_stop_interrupts_the_jobs_and_kills_what_ignores_it(capsys):
    scheduler = FakeScheduler()
    plain = subprocess.Popen(["sleep", "60"])  # dies of SIGINT
    stubborn = subprocess.Popen(["bash", "-c", "trap '' INT; sleep 60"])  # ignores it
    server = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        _wait_for_child(os.getpid(), stubborn.pid)
        stopper = _signals.Stopper(scheduler, grace=0.5)
        stopper.handle(signal.SIGTERM)
        stopper.thread.join(120)
        assert not stopper.thread.is_alive()  # it ends once no job process is left
        assert plain.wait(timeout=5) == -signal.SIGINT
        assert stubborn.wait(timeout=5) == -signal.SIGKILL  # long before its 60 s
        assert server.poll() is None  # a session leader is no job: it stays
    finally:
        for proc in (plain, stubborn, server):
            proc.kill()
            proc.wait()
    assert scheduler.stops == 1
    err = capsys.readouterr().err
    assert "ibrobust: SIGTERM: stopping the run - SIGINT to the running jobs' processes" in err
    assert "job process(es) alive 0.5 s after SIGINT: SIGKILL" in err


def test_the_first_signal_stops_once_later_ones_only_say_so(capsys):
    scheduler = FakeScheduler()
    stopper = _signals.Stopper(scheduler, grace=0.5)
    stopper.handle(signal.SIGINT)
    stopper.handle(signal.SIGTERM)
    stopper.thread.join(5)
    assert scheduler.stops == 1 and stopper.signal == "SIGINT"
    err = capsys.readouterr().err
    assert "ibrobust: SIGINT: stopping the run" in err
    assert "SIGTERM: already stopping (since SIGINT)" in err


@pytest.mark.parametrize(
    ("main", "local", "scheduler"),
    [
        (False, True, FakeScheduler()),  # a job's own snakemake process
        (True, False, FakeScheduler()),  # a remote executor: SLURM's scancel is Snakemake's
        (True, True, None),  # no scheduler
    ],
    ids=["job-process", "remote-executor", "no-scheduler"],
)
def test_nothing_is_installed_outside_a_local_run(main, local, scheduler):
    before = {sig: signal.getsignal(sig) for sig in _signals.SIGNALS}
    workflow = SimpleNamespace(is_main_process=main, local_exec=local, scheduler=scheduler)
    assert not _signals.stop_jobs_on_signal(workflow)
    assert {sig: signal.getsignal(sig) for sig in _signals.SIGNALS} == before


JOB = """
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import _signals
_signals.{setup}()
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    print("no interrupt", flush=True)
except KeyboardInterrupt:
    os.kill(os.getpid(), signal.SIGINT)  # a second one while the run is being closed
    time.sleep(0.2)
    print("closed", flush=True)
"""


def _job(setup: str, invocation: bool, code: str = JOB) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != _lifecycle.ENV_INVOCATION}
    if invocation:  # a job of this (live) process's invocation
        env[_lifecycle.ENV_INVOCATION] = f"{socket.gethostname()}:{os.getpid()}:x"
    return subprocess.run(
        [sys.executable, "-c", code.format(setup=setup), str(SCRIPTS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_job_closes_its_run_despite_a_second_interrupt():
    proc = _job("interrupt_once", invocation=True)
    assert proc.returncode == 0 and proc.stdout == "closed\n", proc.stderr


def test_a_job_dies_at_once_of_an_interrupt_before_its_run_opens():
    proc = _job("die_on_interrupt", invocation=True)
    assert proc.returncode == -signal.SIGINT and not proc.stdout, proc.stderr


def test_a_job_past_its_block_ignores_interrupts():
    proc = _job("ignore_interrupts", invocation=True)
    assert proc.returncode == 0 and proc.stdout == "no interrupt\n", proc.stderr


def test_outside_a_workflow_job_sigint_is_left_alone():
    proc = _job("interrupt_once", invocation=False)  # e.g. a test building a Job in-process
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr
    assert proc.stdout == ""
