"""Stopping the tracking server's process group (workflow_scripts/_tracking/server.py) on real
processes: a zombie is not a live member, and the supervisor does not wait for a CLI
whose server processes are down (the CLI's teardown took seconds on a busy machine)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
from _tracking import server as _server  # noqa: E402

# A stand-in for `mlflow server`: starts a "uvicorn" child in its group that exits on
# SIGTERM, and itself ignores SIGTERM and sleeps (a teardown that never ends).
FAKE_CLI = """
import signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(child.pid, flush=True)
child.wait()
time.sleep(600)
"""


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_a_zombie_is_not_a_live_member_of_its_group():
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    deadline = time.monotonic() + 60
    while _state(proc.pid) != "Z":
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.05)
    os.killpg(proc.pid, 0)  # what the old check asked: the kernel still lists the group
    assert not _server._group_alive(proc.pid)
    proc.wait()


def test_stop_takes_the_cli_down_once_the_server_processes_are_down(tmp_path):
    out = tmp_path / "out.txt"
    with out.open("w") as fh:
        sup = subprocess.Popen(
            [sys.executable, _server.__file__, "--watch", str(os.getpid()), "--"]
            + [sys.executable, "-c", FAKE_CLI],
            stdout=fh,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while not out.read_text().strip():
        assert time.monotonic() < deadline and sup.poll() is None, "the fake server never ran"
        time.sleep(0.05)
    members = _server._others_in_group(sup.pid)
    assert len(members) == 3 and sup.pid in members  # supervisor, CLI, its "uvicorn"
    t0 = time.monotonic()
    _server._kill_group(sup.pid, timeout=300, reap=sup.poll)
    took = time.monotonic() - t0
    try:
        assert not _server._group_alive(sup.pid)
        # gone by the supervisor's SIGKILL of the CLI, not by _kill_group's own SIGKILL
        # after its 300 s (the CLI ignores SIGTERM and sleeps 600 s)
        assert took < 120, took
        assert sup.wait(timeout=30) == 0
    finally:
        try:
            os.killpg(sup.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
