"""workflow_scripts/_warm.py on real processes: a job handed to the warm server runs as if it
had started fresh (streams, directory, environment, argv, exit status, signals), and dies
with its client; without a server a script runs as before. The workflow's own use (the tiny
run forked warm, the same outputs as a fresh run) is tests/workflow/test_reproducible.py."""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "workflow_scripts"
sys.path.insert(0, str(SCRIPTS))
import _warm  # noqa: E402

import _warm_server  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

# what Snakemake's script preamble does that the hand-off looks for: `snakemake` in __main__
PREAMBLE = "class Snakemake:\n    pass\n\n\nsnakemake = Snakemake()\nimport _warm\n"
# a module the server preloads whose import-time setup must be redone in every job
HOOKED = (
    "import os\nimport _warm\n\n"
    "_warm.on_job_start(lambda: print('hook', os.environ.get('WARM_TEST', '-'), flush=True))\n"
)


def _wait(cond, timeout: float = 15.0) -> bool:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            return False
        time.sleep(0.02)
    return True


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def start_server(tmp_path: Path, modules: dict[str, str]) -> dict:
    """A warm server (child of this process) preloading a scripts folder of its own that
    holds ``modules`` (file name -> text); the environment a client needs, the process."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name, text in modules.items():
        (scripts / name).write_text(text)
    sock, log = tmp_path / "s", tmp_path / "warm.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SCRIPTS), str(scripts)])}
    env.pop(_warm.ENV_SOCKET, None)
    with open(log, "a") as err:
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPTS / "_warm_server.py"), str(sock), str(os.getpid()),
             str(log), str(scripts)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            start_new_session=True,
        )  # fmt: skip
    assert _wait(sock.exists, 60), log.read_text()
    client_env = {
        **env,
        _warm.ENV_SOCKET: str(sock),
        _warm.ENV_PYTHON: _warm.interpreter(),
        _warm.ENV_HOST: os.uname().nodename,
    }
    return {"env": client_env, "proc": proc, "log": log, "socket": sock}


@pytest.fixture
def server(tmp_path):
    """A server whose scripts import one module (_hooked) with a job-start hook."""
    srv = start_server(tmp_path, {"_hooked.py": HOOKED, "job.py": "import _hooked\n"})
    yield srv
    srv["proc"].kill()
    srv["proc"].wait(10)


def script(tmp_path: Path, body: str, preamble: str = PREAMBLE) -> Path:
    path = tmp_path / "job_script.py"
    path.write_text(preamble + body)
    return path


def run(path: Path, env: dict, cwd: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(path), *args], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=60, **kw,
    )  # fmt: skip


REPORT = (
    "import os, sys\n"
    "print('role', _warm.ROLE, 'cwd', os.getcwd(), 'arg', sys.argv[1:], 'env',"
    " os.environ.get('WARM_TEST'), 'path0', sys.path[0], 'umask', oct(os.umask(0o22)))\n"
    "print('to stderr', file=sys.stderr)\n"
)


def test_a_job_runs_in_a_fork_with_the_clients_streams_directory_environment_and_argv(
    server, tmp_path
):
    work = tmp_path / "work"
    work.mkdir()
    env = {**server["env"], "WARM_TEST": "from-the-client"}
    path = script(tmp_path, REPORT)
    res = run(path, env, work, "a1", "b 2", preexec_fn=lambda: os.umask(0o027))
    assert res.returncode == 0, res.stderr
    # the hook ran in the job after the client's environment was in place
    assert res.stdout.splitlines()[0] == "hook from-the-client"
    line = res.stdout.splitlines()[1]
    assert f"role job cwd {work} arg ['a1', 'b 2'] env from-the-client" in line
    assert f"path0 {tmp_path} umask 0o27" in line  # sys.path[0]: the script's folder
    assert res.stderr.strip() == "to stderr"


def test_without_a_server_or_outside_a_snakemake_script_the_script_runs_itself(server, tmp_path):
    env = {**server["env"], _warm.ENV_SOCKET: str(tmp_path / "no-such-socket")}
    res = run(script(tmp_path, REPORT), env, tmp_path)
    assert res.returncode == 0 and "role client" in res.stdout, res.stderr
    # no `snakemake` in __main__ (a tool, a snakemake process): never handed off
    res = run(script(tmp_path, REPORT, preamble="import _warm\n"), server["env"], tmp_path)
    assert res.returncode == 0 and "role client" in res.stdout, res.stderr
    # another interpreter, another host: started fresh
    for key in (_warm.ENV_PYTHON, _warm.ENV_HOST):
        res = run(script(tmp_path, REPORT), {**server["env"], key: "elsewhere"}, tmp_path)
        assert "role client" in res.stdout, (key, res.stderr)


@pytest.mark.parametrize(
    "body, status, stderr",
    [
        ("import sys\nsys.exit(3)\n", 3, ""),
        ("import sys\nsys.exit('bad value of key x')\n", 1, "bad value of key x"),
        ("raise ValueError('boom')\n", 1, "ValueError: boom"),
        ("import atexit\natexit.register(print, 'at exit')\n", 0, ""),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", -9, ""),
    ],
)
def test_the_clients_status_is_the_jobs(server, tmp_path, body, status, stderr):
    res = run(script(tmp_path, "assert _warm.ROLE == 'job'\n" + body), server["env"], tmp_path)
    assert res.returncode == status, res.stderr
    assert stderr in res.stderr
    if "Traceback" in res.stderr:  # as a fresh interpreter prints it
        assert "job_script.py" in res.stderr
    if "atexit" in body:  # the job's exit handlers run before it ends
        assert res.stdout.strip().endswith("at exit")


def _start(server, tmp_path, body: str, **popen):
    pidfile = tmp_path / "job.pid"
    path = script(
        tmp_path,
        f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\n" + body,
    )
    client = subprocess.Popen(
        [sys.executable, str(path)], env=server["env"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen,
    )  # fmt: skip
    assert _wait(lambda: pidfile.exists() and pidfile.read_text())
    job = int(pidfile.read_text())
    assert job != client.pid
    return client, job


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_client_reaches_the_job_and_the_client_dies_as_it_did(
    server, tmp_path, sig
):
    client, job = _start(server, tmp_path, "time.sleep(60)\n")
    client.send_signal(sig)
    out, err = client.communicate(timeout=20)
    assert client.returncode == -sig, err  # SIGINT: KeyboardInterrupt, then death by SIGINT
    if sig == signal.SIGINT:
        assert "KeyboardInterrupt" in err
    assert _wait(lambda: not _alive(job), 5)


def test_a_job_whose_client_is_killed_is_killed_too(server, tmp_path):
    client, job = _start(server, tmp_path, "time.sleep(60)\n")
    client.kill()
    client.wait(10)
    assert _wait(lambda: not _alive(job), 5), "the job outlived its SIGKILLed client"


def test_the_server_ends_with_its_parent_and_removes_its_socket(tmp_path):
    """Started by a parent that then exits (snakemake killed outright): the server notices
    within about a second, removes its socket and writes its phases line."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    sock, log = tmp_path / "s", tmp_path / "warm.log"
    parent = (
        "import os, subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, {str(SCRIPTS / '_warm_server.py')!r}, {str(sock)!r},"
        f" str(os.getpid()), {str(log)!r}, {str(scripts)!r}], start_new_session=True)\n"
        f"while not os.path.exists({str(sock)!r}): time.sleep(0.02)\n"
        "print(p.pid, flush=True)\n"
    )
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    server_pid = int(out.stdout)
    assert _wait(lambda: not sock.exists(), 10)
    assert _wait(lambda: not _alive(server_pid), 5)
    text = log.read_text()
    assert "is gone: served 0 jobs" in text
    assert re.search(r" phases wall=[\d.]+ cpu=[\d.]+ startup=", text)


def test_exit_status_as_the_interpreter_maps_sys_exit():
    assert _warm_server._exit_status(None) == 0
    assert _warm_server._exit_status(3) == 3
    assert _warm_server._exit_status(256 + 4) == 4  # the OS keeps the low byte
    assert _warm_server._exit_status("message") == 1


def test_preload_imports_what_the_scripts_import_and_reports_what_it_could_not(tmp_path):
    (tmp_path / "a.py").write_text("import json\nfrom email import message\n")
    (tmp_path / "b.py").write_text("import no_such_module_xyz\nfrom . import rel\n")
    code = (
        f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); import _warm_server;"
        f" failed = _warm_server.preload({str(tmp_path)!r});"
        " print(failed, 'email.message' in sys.modules, 'json' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.stdout.split() == ["['no_such_module_xyz']", "True", "True"], out.stderr


def _first_import(path: Path) -> str | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Import):
            return node.names[0].name
        if isinstance(node, ast.ImportFrom):
            return node.module
    return None


def test_every_script_a_rule_runs_imports_warm_first():
    """The hand-off must come before the heavy imports, or the job pays them twice."""
    scripts = set()
    for smk in [ROOT / "Snakefile", *(ROOT / "rules").glob("*.smk")]:
        scripts.update(re.findall(r'script:\s*"\.\./workflow_scripts/(\w+\.py)"', smk.read_text()))
    assert len(scripts) >= 30, scripts
    wrong = {
        s: _first_import(SCRIPTS / s) for s in scripts if _first_import(SCRIPTS / s) != "_warm"
    }
    assert not wrong, wrong


def test_a_job_forked_after_torch_was_imported_runs_parallel_ops_with_its_threads(tmp_path):
    """torch's OpenMP pool is not fork-safe once started: the server imports torch but never
    runs an op, so a forked job can use several threads (a hang here fails by timeout).
    The BLAS/OpenMP pools the server loaded take the job's OMP_NUM_THREADS (threadpoolctl),
    as a fresh interpreter's would at load."""
    srv = start_server(tmp_path, {"job.py": "import numpy\nimport torch\n"})
    try:
        body = (
            "import torch\nfrom threadpoolctl import threadpool_info\n"
            "assert _warm.ROLE == 'job'\n"
            "print(max(p['num_threads'] for p in threadpool_info()))\n"
            "torch.set_num_threads(2)\n"
            "a = torch.randn(512, 512)\nprint(float((a @ a).sum().isfinite()))\n"
        )
        env = {**srv["env"], "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        res = run(script(tmp_path, body), env, tmp_path)
        assert res.returncode == 0, res.stderr
        assert res.stdout.split() == ["1", "1.0"]
    finally:
        srv["proc"].kill()
        srv["proc"].wait(10)


def test_a_client_under_nohup_keeps_sighup_ignored_in_its_job(server, tmp_path):
    client, job = _start(
        server, tmp_path,
        "import signal\ntime.sleep(0.5)\nprint(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN)\n",
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )  # fmt: skip
    client.send_signal(signal.SIGHUP)  # ignored by the client, not forwarded
    out, err = client.communicate(timeout=20)
    assert client.returncode == 0, err
    assert out.splitlines()[-1] == "True"  # (after the hook's line)


def test_a_job_inherits_no_descriptor_of_the_server(server, tmp_path):
    body = (
        "import os\nout = []\n"
        "for f in sorted(int(f) for f in os.listdir('/proc/self/fd')):\n"
        "    try:\n"
        "        out.append(os.readlink(f'/proc/self/fd/{f}')[:7]) if f > 2 else None\n"
        "    except FileNotFoundError:  # the listing's own directory handle, closed by now\n"
        "        pass\n"
        "print(out)\n"
    )
    res = run(script(tmp_path, body), server["env"], tmp_path)
    assert res.returncode == 0, res.stderr
    # only the job's own connection to its client: no listener, no other job's connection,
    # no wake-up pipe, no server log
    assert ast.literal_eval(res.stdout.splitlines()[-1]) == ["socket:"], res.stdout


def test_when_the_server_dies_during_a_job_the_client_fails_with_a_message(server, tmp_path):
    client, job = _start(server, tmp_path, "time.sleep(1.0)\n")
    server["proc"].kill()
    out, err = client.communicate(timeout=20)
    assert client.returncode == 1
    assert "warm job server ended before this job did" in err


class _Peer:
    """The server's end of a client connection, played by the test."""

    def __init__(self):
        import socket

        self.client, self.server = socket.socketpair()


def test_the_clients_wait_queues_signals_until_the_job_exists(capsys):
    peer = _Peer()
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                              start_new_session=True)  # fmt: skip
    wait = _warm._Wait(peer.client)
    try:
        wait.forward(signal.SIGTERM, None)  # before the pid: queued, not lost
        peer.server.sendall(f"pid {target.pid}\nstatus 0\n".encode())
        assert wait.status() == 0
        assert target.wait(10) == -signal.SIGTERM  # delivered to the job's group
    finally:
        for sig, handler in wait.saved.items():
            signal.signal(sig, handler)
        target.kill()


def test_the_clients_wait_without_a_job_lets_the_client_start_it_itself():
    peer = _Peer()
    before = signal.getsignal(signal.SIGTERM)
    wait = _warm._Wait(peer.client)
    peer.server.close()  # the job never started: no pid
    assert wait.status() is None
    assert signal.getsignal(signal.SIGTERM) is before  # the client's handlers are back
    peer = _Peer()
    wait = _warm._Wait(peer.client)
    wait.forward(signal.SIGINT, None)  # a stop came first: the client ends as it says
    peer.server.close()
    assert wait.status() == -signal.SIGINT
    for sig, handler in wait.saved.items():
        signal.signal(sig, handler)
