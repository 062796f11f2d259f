"""workflow_scripts/_lifecycle.py on real processes: a job's watch on its snakemake, and
the token the snakemake process exports to its jobs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _lifecycle  # noqa: E402
from _tracking.record import process_start, writer_alive  # noqa: E402


def _dead_pid() -> int:
    """The pid of a process that ran and was reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_exported_token_names_this_live_process(monkeypatch):
    monkeypatch.delenv(_lifecycle.ENV_INVOCATION, raising=False)
    token = _lifecycle.export()
    host, pid, start = token.rsplit(":", 2)
    assert (host, int(pid), start) == (
        socket.gethostname(),
        os.getpid(),
        process_start(os.getpid()),
    )
    assert os.environ[_lifecycle.ENV_INVOCATION] == token
    here = {"host": socket.gethostname(), "pid": os.getpid(), "pstart": start}
    assert writer_alive(here)
    assert not writer_alive({**here, "pid": _dead_pid()})
    assert not writer_alive({**here, "pstart": "1"})  # a reused pid is another process
    assert writer_alive({**here, "host": "another-host", "pid": _dead_pid()})  # cannot tell


def test_a_job_ends_when_its_snakemake_is_gone():
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    token = f"{socket.gethostname()}:{parent.pid}:{process_start(parent.pid)}"
    job_code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); import _lifecycle; "
        "assert _lifecycle.watch_invocation(interval=0.1) is not None; "
        "print('watching', flush=True); time.sleep(600)"
    )
    job = subprocess.Popen(
        [sys.executable, "-c", job_code, str(SCRIPTS)],
        env={**os.environ, _lifecycle.ENV_INVOCATION: token},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert job.stdout.readline().strip() == "watching"
        time.sleep(0.5)
        assert job.poll() is None  # its snakemake runs: the job goes on
        parent.kill()
        parent.wait()
        job.wait(timeout=60)  # a liveness bound, not a speed goal
        assert job.returncode == -signal.SIGTERM
        assert (
            f"the snakemake process of this job (pid {parent.pid} on {socket.gethostname()}) is gone"
            in job.stderr.read()
        )
    finally:
        for p in (parent, job):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_no_watch_without_an_invocation_or_on_another_host(monkeypatch):
    monkeypatch.delenv(_lifecycle.ENV_INVOCATION, raising=False)
    assert _lifecycle.watch_invocation() is None
    monkeypatch.setenv(_lifecycle.ENV_INVOCATION, "another-host:1:1")
    assert _lifecycle.watch_invocation() is None
