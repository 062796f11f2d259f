"""Real components for the operations tests: a local SLURM cluster, a throwaway PostgreSQL
server, headless Chromium, an `mlflow server` on a given store, and a proxy that
makes a tracking server answer slowly.

Each ``require_*`` returns what the test needs or skips it with the reason and the way
to get the component (``.ci/run`` installs and starts all of them).
"""

from __future__ import annotations

import glob
import http.client
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from smk_helpers import REPO, TINY, base_env, snakemake_args, write_yaml

LOCAL_SLURM = REPO / "ops" / "local-slurm"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def artifacts_dir(name: str) -> Path:
    """Where a test keeps files for people to look at (screenshots, reports):
    $IBROBUST_TEST_ARTIFACTS/<name>, else tests/artifacts/<name> (ignored by git)."""
    root = Path(os.environ.get("IBROBUST_TEST_ARTIFACTS") or REPO / "tests" / "artifacts")
    out = root / name
    out.mkdir(parents=True, exist_ok=True)
    return out


def record(line: str) -> None:
    """Print a measurement and append it to <artifacts>/measurements.txt (CI shows it)."""
    print(line)
    path = artifacts_dir(".") / "measurements.txt"
    with path.open("a") as fh:
        fh.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")


# ---- SLURM ---------------------------------------------------------------------------
def _sinfo_states() -> str:
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=15
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out


def require_slurm() -> None:
    """A SLURM cluster that accepts jobs, or skip. Starts the project's local cluster
    (ops/local-slurm) when its daemons are installed but not running and we are root."""
    missing = [
        c for c in ("sbatch", "squeue", "sinfo", "slurmctld", "slurmd") if not shutil.which(c)
    ]
    if missing:
        pytest.skip(
            f"SLURM not installed ({', '.join(missing)} not found): run `ops/local-slurm start` "
            "as root (installs Debian's slurm-wlm + munge), or .ci/run"
        )
    if not re.search(r"idle|mix|alloc", _sinfo_states()):
        if os.geteuid() == 0:
            subprocess.run(["bash", str(LOCAL_SLURM), "start"], capture_output=True, timeout=120)
        if not re.search(r"idle|mix|alloc", _sinfo_states()):
            pytest.skip("no SLURM node is up (sinfo shows none idle): run `ops/local-slurm start`")


SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+)")


def slurm_job_ids(output: str) -> dict[str, str]:
    """Snakemake job id -> SLURM job id, from the executor's 'submitted' lines."""
    return {m.group(1): m.group(2) for m in SUBMITTED.finditer(output)}


# ---- PostgreSQL ----------------------------------------------------------------------
def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    cands = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return cands[-1] if cands else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def postgres_server(password: str | None = None) -> Iterator[str]:
    """A throwaway PostgreSQL server on 127.0.0.1 (initdb in a temp dir, pg_ctl on a free
    port; as the ``postgres`` user when we are root) with database ``mlflow``; yields its
    SQLAlchemy URI and stops and removes it afterwards. Skips if PostgreSQL is absent.

    Without ``password`` it trusts every TCP connection (the URI's ``secret`` is not
    checked); with one, TCP connections must give it (scram-sha-256), so a URI with any
    other password, or none, is refused."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip(
            "PostgreSQL not installed (initdb/pg_ctl not found): "
            "apt-get install postgresql, or .ci/run"
        )
    prefix: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
        prefix = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="ibrobust-pg-"))
    if prefix:
        shutil.chown(root, "postgres", "postgres")
    data, sock, log = root / "data", root / "sock", root / "server.log"
    port = free_port()

    def run(*cmd: str) -> None:
        res = subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}")

    auth = ["-A", "trust"]
    if password:  # the superuser's password from a file (never on a command line)
        pwfile = root / "pw"
        pwfile.write_text(password + "\n")
        if prefix:
            shutil.chown(pwfile, "postgres", "postgres")
        auth = ["--auth-local", "trust", "--auth-host", "scram-sha-256", "--pwfile", str(pwfile)]
    try:
        run("mkdir", "-p", str(sock))
        run(initdb, "-D", str(data), "-U", "postgres", *auth, "--no-sync", "-E", "UTF8")
        if password:
            pwfile.unlink()
        opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(pg_ctl, "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "60", "start")
        psql = _pg_bin("psql")
        assert psql, "psql not found next to pg_ctl"
        # over the Unix socket (trusted): no password needed to create the database
        run(
            psql, "-h", str(sock), "-p", str(port), "-U", "postgres", "-c", "CREATE DATABASE mlflow"
        )
        yield f"postgresql://postgres:{password or 'secret'}@127.0.0.1:{port}/mlflow"
    finally:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(root, ignore_errors=True)


# ---- Chromium ------------------------------------------------------------------------
def require_chromium() -> str:
    path = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if not path:
        pytest.skip("Chromium not installed: apt-get install chromium (Debian), or .ci/run")
    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.skip('the playwright package is missing: pip install -e ".[test]"')
    return path


# ---- the tracking server -------------------------------------------------------------
@contextmanager
def tracking_server(store_uri: str, artifacts: Path, log: Path, port: int = 0) -> Iterator[str]:
    """``mlflow server`` on a given store (one worker, ``port`` or a free one), until /health
    answers; its process group is ended afterwards."""
    import urllib.request

    port = port or free_port()
    cmd = [str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri",
           store_uri, "--artifacts-destination", str(artifacts), "--host", "127.0.0.1",
           "--port", str(port), "--workers", "1"]  # fmt: skip
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=fh, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not start: {log.read_text()[-500:]}")
            time.sleep(0.5)
        yield uri
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


class SlowProxy:
    """A tracking server that answers slowly: every request but ``/health`` (which the
    workflow's probes ask with a 2-5 s timeout) waits :attr:`delay` s, then goes to the
    server as it came. ``delay`` may change at any time; :attr:`requests` counts what was
    held."""

    HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "server", "date"}

    def __init__(self, upstream: str):
        self.delay = 0.0
        self.requests = 0
        target = urllib.parse.urlsplit(upstream)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as MLflow's client uses it

            def forward(self) -> None:
                body = _request_body(self)
                if not self.path.startswith("/health"):
                    proxy.requests += 1
                    time.sleep(proxy.delay)
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in proxy.HOP}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status)
                for key, value in resp.getheaders():
                    if key.lower() not in proxy.HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward  # noqa: N815

            def log_message(self, *args) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.uri = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _request_body(handler: http.server.BaseHTTPRequestHandler) -> bytes | None:
    """A request's body, sized or chunked."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        body = b""
        while size := int(handler.rfile.readline().split(b";")[0], 16):
            body += handler.rfile.read(size)
            handler.rfile.readline()
        handler.rfile.readline()
        return body
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else None


@contextmanager
def slow_proxy(upstream: str) -> Iterator[SlowProxy]:
    """A :class:`SlowProxy` in front of the tracking server at ``upstream`` (delay 0 at first)."""
    proxy = SlowProxy(upstream)
    try:
        yield proxy
    finally:
        proxy.close()


def max_running_jobs(output: str) -> int:
    """Most jobs running at once, from Snakemake's log: a job starts at its ``rule NAME:``
    block (``jobid: N``) and ends at ``Finished jobid: N``."""
    running: set[str] = set()
    best, in_block = 0, False
    for line in output.splitlines():
        if re.match(r"^(local)?rule \w+:\s*$", line):
            in_block = True
            continue
        m = re.match(r"^\s+jobid: (\d+)$", line)
        if m and in_block:
            running.add(m.group(1))
            best, in_block = max(best, len(running)), False
            continue
        m = re.search(r"Finished jobid: (\d+)", line)
        if m:
            running.discard(m.group(1))
    return best


def wait_until(predicate, timeout: float, what: str, interval: float = 0.3):
    t0 = time.monotonic()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


# ---- a run whose training jobs outlast the test ----------------------------------------
# the tiny config's FA training, gd_tiny slowed to ~1e6 GD steps: far longer than a test waits
SLOW_GD = {"optimizers": {"gd_tiny": {"max_steps": 10**6, "stop_loss": 1.0e-30}}}
SLOW_TRAIN_LOG = "results/logs/train/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed{}.log"


def start_slow_run(
    work: Path, targets: list[str], *, cores: int, config: dict | None = None, **popen
) -> tuple[subprocess.Popen, Path, Path]:
    """Snakemake on the tiny config with gd_tiny slowed (plus ``config``, an overlay's top-
    level keys), in a session of its own, so that a signal sent to it reaches snakemake alone;
    its stdout and stderr go to files beside ``work``. ``popen``: more Popen arguments."""
    slow = write_yaml(work.parent / "slow.yaml", {**SLOW_GD, **(config or {})})
    out, err = work.parent / "stdout.txt", work.parent / "stderr.txt"
    with out.open("w") as fo, err.open("w") as fe:
        proc = subprocess.Popen(
            snakemake_args(work, "--cores", str(cores), *targets, configfiles=(TINY, slow)),
            cwd=work,
            env=base_env(),
            stdout=fo,
            stderr=fe,
            start_new_session=True,
            **popen,
        )
    return proc, out, err


def wait_for_first_step(proc: subprocess.Popen, logs: list[Path], timeout: float, err: Path):
    """Until every training job in ``logs`` has logged a step (AssertionError naming the
    run's stderr if snakemake ended first)."""
    wait_until(
        lambda: (
            all(f.is_file() and "progress " in f.read_text() for f in logs)
            or proc.poll() is not None
        ),
        timeout,
        "the training jobs' first logged step",
    )
    assert proc.poll() is None, err.read_text()


def incomplete_markers(work: Path) -> list[str]:
    """Snakemake's markers of outputs whose job started and was not post-processed."""
    root = work / ".snakemake" / "incomplete"
    return sorted(p.name for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def processes_of(work: Path) -> list[str]:
    """Live processes whose command line names ``work`` (snakemake and its jobs)."""
    out = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (cmdline.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(work) in args and state != "Z":
            out.append(f"{cmdline.parent.name}: {args[:200]}")
    return out


# ---- the HTML report -----------------------------------------------------------------
def report_entries(html: str) -> tuple[dict, dict]:
    """(results, categories) embedded in a self-contained Snakemake 9 HTML report:
    ``var results = {path: {caption, data_uri, ...}}`` and
    ``var categories = {category: {subcategory: [path, ...]}}``."""
    import json

    out = []
    for var in ("results", "categories"):
        m = re.search(rf"var {var} = (\{{.*?\}});\s*\n", html, re.S)
        assert m, f"no `var {var}` in the report (report format changed?)"
        out.append(json.loads(m.group(1)))
    return out[0], out[1]


def check_report(html_path: Path, workdir: Path, study: str, figures: list[str]) -> None:
    """Every figure of ``study`` is in the report, embedded byte for byte, under the
    study's category, with a caption that names the study and the paper (or says none)."""
    import base64

    html = html_path.read_text()
    assert "<script src=" not in html and "<link " not in html, "the report loads external files"
    results, categories = report_entries(html)
    paths = [f"results/{study}/figures/{f}.png" for f in figures]
    assert set(paths) <= set(results), sorted(set(paths) - set(results))
    assert sorted(categories[study]["figures"]) == sorted(paths), categories
    for p in paths:
        entry = results[p]
        data = base64.b64decode(entry["data_uri"].split("base64,", 1)[1])
        assert data == (workdir / p).read_bytes(), f"{p}: embedded figure differs from the file"
        caption = entry["caption"]
        assert f'Study <tt class="docutils literal">{study}</tt>' in caption, caption
        assert re.search(r"et al\.", caption), f"{p}: the caption names no paper: {caption}"
