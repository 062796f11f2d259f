"""Benchmark: a tracking-server outage in mid-run costs no results (printed, never asserted).

Runs the tiny config twice with the run's own tracking server (``mlflow.server.start``):
once uninterrupted, once with the server killed (SIGKILL of its process group) after
``--after`` jobs have finished. Then

* compares every file under ``results/`` (logs, benchmarks and the store excepted;
  ``model.pt`` by its tensors where the bytes differ),
* counts the spooled runs and the job logs that warn about them,
* replays the spool (through a tracking server on the outage run's store, as its
  artifacts live behind one), twice, and compares the two stores run by run (name,
  status, params, tags, metric histories without timings, artifact lists),
* prints both wall times: the outage's cost is their difference.

  python benchmarks/tracking_outage.py [--after 8] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "workflow" / "configs" / "tiny.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
sys.path.insert(0, str(REPO / "workflow_scripts"))
SKIP = ("logs", "benchmarks", "mlflow")  # results/ folders that are not results
VOLATILE_TAGS = ("mlflow.parentRunId", "ibrobust.host", "mlflow.user", "ibrobust.tracking_server")


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("IBROBUST_", "MLFLOW_"))}
    out["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), out.get("PYTHONPATH")]))
    out.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    return out


def start(workdir: Path, overlay: Path) -> subprocess.Popen:
    workdir.mkdir(parents=True)
    args = ["all", "-d", str(workdir), "--cores", "2", "--configfile", str(TINY), str(overlay)]
    log = (workdir / "snakemake.out").open("w")
    return subprocess.Popen([*SNAKEMAKE, *args], stdout=log, stderr=subprocess.STDOUT, env=env())


def finished_jobs(workdir: Path) -> int:
    logs = (workdir / "results" / "logs").rglob("*.log")
    return sum(" done in " in p.read_text(errors="replace") for p in logs)


def server_group(snakemake_pid: int) -> int | None:
    """The process group of the run's tracking-server supervisor (a child of snakemake)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            any(a.endswith(b"_tracking/server.py") for a in args)
            and str(snakemake_pid).encode() in args
        ):
            return os.getpgid(int(cmdline.parent.name))
    return None


def digest(path: Path) -> str:
    if path.suffix == ".pt":  # the zip's bytes may differ; the tensors must not
        import torch

        obj = torch.load(path, map_location="cpu", weights_only=False)
        state = obj.get("state_dict", obj) if isinstance(obj, dict) else obj
        if isinstance(state, dict):
            parts = [
                f"{k}:{hashlib.sha256(v.numpy().tobytes()).hexdigest()}"
                for k, v in sorted((k, v) for k, v in state.items() if hasattr(v, "numpy"))
            ]
            return hashlib.sha256("|".join(parts).encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def result_files(workdir: Path) -> dict[str, str]:
    root = workdir / "results"
    return {
        str(p.relative_to(root)): digest(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in SKIP
    }


def artifact_files(artifact_uri: str, destination: Path) -> list[str]:
    """A run's artifact files, read from disk (behind a server: its artifacts destination)."""
    if artifact_uri.startswith("mlflow-artifacts:"):
        root = destination / artifact_uri.split(":", 1)[1].lstrip("/")
    else:
        root = Path(artifact_uri.removeprefix("file://"))
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def store_summary(db: Path) -> dict:
    """Run name -> what a comparison of two stores should find equal."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("ibrobust")
    out = {}
    for r in client.search_runs([exp.experiment_id], max_results=5000):
        name = r.info.run_name if r.data.tags.get("ibrobust.kind") == "job" else "<workflow>"
        metrics = {
            k: [(m.step, m.value) for m in client.get_metric_history(r.info.run_id, k)]
            for k in sorted(r.data.metrics)
            if "seconds" not in k and "time" not in k
        }
        tags = {
            k: v
            for k, v in r.data.tags.items()
            if k not in VOLATILE_TAGS
            and not k.startswith("mlflow.")
            or k == "mlflow.source.git.commit"
        }
        arts = artifact_files(r.info.artifact_uri, db.parent / "artifacts")
        if name == "<workflow>":
            tags.pop("ibrobust.config_hash", None)
            params = {k: v for k, v in r.data.params.items()}
        else:
            params = r.data.params
        assert name not in out, f"run {name} logged twice"
        out[name] = {
            "status": r.info.status,
            "params": params,
            "tags": tags,
            "metrics": metrics,
            "artifacts": arts,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--after", type=int, default=8, help="jobs finished before the outage")
    parser.add_argument("--workdir", type=Path, help="keep the runs here (default: a temp dir)")
    parser.add_argument("--compare-only", action="store_true", help="compare --workdir's stores")
    args = parser.parse_args()
    if args.compare_only:
        compare_stores(args.workdir / "reference", args.workdir / "outage")
        return
    base = args.workdir or Path(tempfile.mkdtemp(prefix="ibrobust-outage-"))
    base.mkdir(parents=True, exist_ok=True)
    overlay = base / "server.yaml"
    overlay.write_text("mlflow:\n  server:\n    start: true\n")

    t0 = time.perf_counter()
    ref = start(base / "reference", overlay)
    assert ref.wait() == 0, f"the reference run failed: {base / 'reference' / 'snakemake.out'}"
    t_ref = time.perf_counter() - t0

    work = base / "outage"
    t0 = time.perf_counter()
    proc = start(work, overlay)
    while finished_jobs(work) < args.after and proc.poll() is None:
        time.sleep(0.2)
    pgid = server_group(proc.pid)
    assert pgid is not None, "no tracking server found"
    os.killpg(pgid, signal.SIGKILL)
    t_kill = time.perf_counter() - t0
    print(f"tracking server killed after {finished_jobs(work)} finished jobs, {t_kill:.1f} s in")
    code = proc.wait()
    t_out = time.perf_counter() - t0
    print(f"outage run: exit {code}, {finished_jobs(work)} jobs done")

    a, b = result_files(base / "reference"), result_files(work)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    print(
        f"result files: {len(a)} reference, {len(b)} outage run, {len(differ)} differ {differ[:5]}"
    )
    spool = work / "results" / "mlflow" / "spool"
    spooled = sorted(spool.glob("*.jsonl"))
    warned = sum(
        "MLflow run not logged" in p.read_text() for p in (work / "results/logs").rglob("*.log")
    )
    print(f"spooled runs: {len(spooled)} files ({warned} job logs warn about theirs)")

    replay_twice(work, spool, base)
    compare_stores(base / "reference", work)
    print(
        f"wall time: reference {t_ref:.1f} s, with the outage {t_out:.1f} s "
        f"(cost {t_out - t_ref:+.1f} s; tracking timeout {_timeout():g} s)"
    )
    print(f"runs kept in {base}")


def replay_twice(work: Path, spool: Path, base: Path) -> None:
    """Replay the spool through a server on the outage run's store, then a copy of it again."""
    from _tracking import replay
    from _tracking.server import ServerSettings, TrackingServer

    db = work / "results" / "mlflow" / "mlflow.db"
    server = TrackingServer(
        ServerSettings(
            backend_store_uri=f"sqlite:///{db}",
            artifacts_destination=str(work / "results" / "mlflow" / "artifacts"),
            log_file=str(base / "replay_server.log"),
            startup_timeout=180,
        )
    )
    uri = server.start()
    try:
        backup = base / "spool-copy"
        shutil.copytree(spool, backup, dirs_exist_ok=True)
        t0 = time.perf_counter()
        first = replay.replay(spool, uri)
        t_replay = time.perf_counter() - t0
        second = replay.replay(backup, uri)
    finally:
        server.stop()
    print(
        f"replay: {len(first.replayed)} replayed, {len(first.present)} already there, "
        f"{len(first.failed)} failed in {t_replay:.1f} s; again: {len(second.replayed)} "
        f"replayed, {len(second.present)} already there, {len(second.failed)} failed"
    )
    for path, why in {**first.failed, **second.failed}.items():
        print(f"  FAILED {path.name}: {why}")


def _timeout() -> float:
    return float(os.environ.get("IBROBUST_TRACKING_TIMEOUT", 30))


def compare_stores(ref: Path, work: Path) -> None:
    """Both stores, run by run: the runs that differ, and in what."""
    sa = store_summary(ref / "results" / "mlflow" / "mlflow.db")
    sb = store_summary(work / "results" / "mlflow" / "mlflow.db")
    names = sa.keys() | sb.keys()
    diff = {
        n: sorted(
            k
            for k in ("status", "params", "tags", "metrics", "artifacts")
            if sa.get(n, {}).get(k) != sb.get(n, {}).get(k)
        )
        for n in names
    }
    diff = {n: d for n, d in diff.items() if d}
    print(
        f"stores: {len(sa)} runs reference, {len(sb)} runs after replay; "
        f"{len(diff)} differ {dict(list(diff.items())[:5])}"
    )


if __name__ == "__main__":
    main()
