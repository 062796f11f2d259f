"""A job that ended cleanly skips the interpreter's teardown (``_job.end_process_now``):
its status stays 0 and its log complete; an error after the job's block still fails the
process; and no workflow script calls ``sys.exit`` (whose status the fast exit would hide)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "workflow_scripts"

SCRIPT = """
import atexit, sys, types
from _job import Job
atexit.register(print, "teardown ran")  # stands for torch's exit handlers (registered earlier)
snakemake = types.SimpleNamespace(  # the name Snakemake gives it in a script
    rule="probe", wildcards={{"seed": "0"}}, threads=1, log=[sys.argv[1]],
    params={{"code": "h"}}, output=[sys.argv[1] + ".out"],
)
with Job(snakemake) as job:
    {inside}
print("stdout kept", flush=False)
{after}
"""


def run_job(
    tmp_path: Path, inside: str = 'job.log.info("inside the block")', after: str = ""
) -> tuple[subprocess.CompletedProcess, str]:
    log = tmp_path / "probe.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(SCRIPTS)])}
    for var in ("IBROBUST_PARENT_RECORD", "IBROBUST_INVOCATION"):  # no tracking, no invocation
        env.pop(var, None)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(inside=inside, after=after), str(log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc, log.read_text()


def test_clean_job_exits_zero_with_its_log_and_stdout(tmp_path):
    proc, log = run_job(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "inside the block" in log and " phases wall=" in log and "done in" in log
    assert proc.stdout.strip() == "stdout kept"  # flushed; the teardown was skipped


def test_error_after_the_block_still_fails_the_process(tmp_path):
    proc, _ = run_job(tmp_path, after="raise RuntimeError('after the block')")
    assert proc.returncode == 1
    assert "RuntimeError: after the block" in proc.stderr
    assert "teardown ran" in proc.stdout  # the normal exit


def test_error_inside_the_block_fails_the_process(tmp_path):
    proc, log = run_job(tmp_path, inside="raise ValueError('inside')")
    assert proc.returncode == 1 and "ValueError: inside" in proc.stderr
    assert "failed after" in log and "stdout kept" not in proc.stdout


def test_no_workflow_script_calls_sys_exit():
    """``end_process_now`` ends a clean job with status 0: a ``sys.exit(n)`` after a job's
    block would be overridden, so job scripts must fail by raising instead."""
    callers = []
    for script in sorted(SCRIPTS.glob("*.py")):
        if script.name.startswith("_"):  # helpers and servers, not job scripts
            continue
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in {
                    ("sys", "exit"),
                    ("os", "_exit"),
                }:
                    callers.append(script.name)
    assert callers == []


def test_a_job_driven_inside_another_program_leaves_its_exit_status_alone(tmp_path):
    # pytest drives Jobs in its own process: the fast exit after a clean block is a job
    # script's alone (its main module holds ``snakemake``), or a failed test run exits 0
    log = tmp_path / "probe.log"
    script = SCRIPT.replace("snakemake = types", "smk = types").replace(
        "Job(snakemake)", "Job(smk)"
    )
    code = script.format(inside="pass", after="raise SystemExit(5)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(SCRIPTS)])}
    for var in ("IBROBUST_PARENT_RECORD", "IBROBUST_INVOCATION"):
        env.pop(var, None)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(log)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 5, proc.stderr
    assert "teardown ran" in proc.stdout  # the interpreter's normal exit
