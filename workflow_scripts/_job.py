"""The adapter every workflow script uses: snakemake object in, a log and a run record out.

with Job(snakemake) as job:
    job.log.info("...")                 # one readable line per event in the rule's log
    job.dataset(snakemake.input.data, "training")   # MLflow dataset input (name, digest)
    job.metrics({"train.loss": v}, step=t)
    job.progress(t, total, loss=v)      # long loops: <= one line per interval + MLflow
    Progress(job.progress_report)       # ... a library loop's (ibrobust.progress)
    job.artifact(path, "figures")
    job.model(snakemake.output.model)   # tag ibrobust.model_path + artifact model/ (cap)

What the job tracks goes to its run record, ``<log>.mlflow.jsonl`` beside its log
(``_tracking.record``); the Snakemake process makes the MLflow run of it (``_tracking.sync``),
so a job never imports MLflow nor waits for the store.

At its end every run gets the metrics ``job.cpu_s`` (user + system CPU seconds of the job
and its finished child processes) and ``job.peak_rss_mb`` (the job process's peak resident
memory), also in its ``done in`` line, and a job that succeeded ``job.seconds``.

Runs are named rule first, then the wildcards most specific first, then the study
(``train seed0/binary/gd_tiny/two_layer_m2/tiny_clusters @fa``; jobs of no study, like
datasets, ``... @shared``): the MLflow runs table shows only a name's first ~15 characters.
Tags ``ibrobust.study`` and ``ibrobust.rule`` filter or group one study's or rule's runs. A job running under SLURM
records its job id (log line and tag ``slurm.job_id``) and node.
"""

from __future__ import annotations

import atexit
import logging
import os
import resource
import socket
import sys
import time
from pathlib import Path
from typing import Any

import _lifecycle
import _signals
from _lifecycle import flush_std_streams
from _tracking import ENV_PARENT, RunRecord, mask_secrets, run_key
from _tracking.record import project_path, record_path

from ibrobust import io
from ibrobust.provenance import flatten

# until the Job exists, SIGINT ends the job at once
_signals.die_on_interrupt()


class Job:
    def __init__(self, smk: Any, study: str | None = None):
        self.smk = smk
        self.rule = smk.rule
        self.wildcards = dict(smk.wildcards.items())
        self.threads = set_threads(max(1, int(smk.threads)))
        self.log = logging.getLogger(f"ibrobust.{self.rule}")
        self.log.setLevel(logging.INFO)
        self.log.handlers.clear()
        fmt = logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S"
        )
        handler = (
            logging.FileHandler(smk.log[0], mode="w")
            if smk.log
            else logging.StreamHandler(sys.stderr)
        )
        handler.setFormatter(fmt)
        handler.addFilter(_mask_record)
        self.log.addHandler(handler)
        self._t0 = time.monotonic()
        # interpreter + imports, wall and CPU
        self._startup = (process_age(), cpu_seconds())
        self._tracking = 0.0
        self._datasets: set[tuple[str, str]] = set()  # (path, context) recorded as inputs
        _lifecycle.watch_invocation()  # lifecycle: the job ends when its snakemake is gone
        _signals.interrupt_once()  # a second SIGINT cannot cut the closing of the run short

    def __enter__(self) -> Job:
        params = {k: v for k, v in dict(self.smk.params.items()).items() if k != "code"}
        wc = self.wildcards
        name = run_name(self.rule, wc)
        tags = {
            "ibrobust.rule": self.rule,
            "ibrobust.kind": "job",
            "ibrobust.code_hash": str(self.smk.params.get("code", "")),
            "ibrobust.host": socket.gethostname(),
            **{f"wildcard.{k}": str(v) for k, v in wc.items()},
        }
        if "study" in wc:
            tags["ibrobust.study"] = wc["study"]
        slurm = slurm_job()
        tags.update({f"slurm.{k}": v for k, v in slurm.items()})
        t0 = time.perf_counter()
        tags["ibrobust.run_key"] = run_key(list(self.smk.output), tags["ibrobust.code_hash"])
        parent = os.environ.get(ENV_PARENT)
        self.run = (
            RunRecord(record_path(self.smk.log[0]), name, tags, flatten(params), parent)
            if parent and self.smk.log
            else None
        )
        self._tracking += time.perf_counter() - t0
        where = " ".join(f"slurm_{k}={v}" for k, v in slurm.items())
        self.log.info(
            "start %s threads=%d mlflow=%s host=%s%s",
            name,
            self.threads,
            "record" if self.run else "off",
            socket.gethostname(),
            f" {where}" if where else "",
        )
        return self

    def metrics(self, values: dict[str, float], step: int = 0) -> None:
        if self.run is None:
            return
        t0 = time.perf_counter()
        self.run.metrics(values, step)
        self._tracking += time.perf_counter() - t0

    def progress(
        self,
        step: int,
        total: int,
        every: float = 30.0,
        log_metrics: bool = True,
        note: str = "",
        **values: float,
    ) -> bool:
        """Report a long loop's progress: at most one log line per ``every`` seconds.

        Writes ``progress 1200/20000 (6.0%) loss=1.234e-03 acc=0.98 | 12 s, ~190 s left``
        for the first step, then whenever ``every`` seconds have passed, and for the last
        step (``step >= total``) - one readable line each, never a carriage-return bar;
        ``note`` (what runs now) follows the percentage.
        ``values`` go to the run record at ``step`` every call (buffered, written at least
        every 2 s while metrics arrive; the Snakemake process syncs the growing record, so
        curves grow in the UI during training).
        Returns whether a line was written.
        """
        if log_metrics and values:
            self.metrics(values, step=step)
        now = time.monotonic()
        last = getattr(self, "_progress_at", None)
        if last is not None and now - last < every and step < total:
            return False
        self._progress_at = now
        start = getattr(self, "_progress_t0", None)
        if start is None:
            start = self._progress_t0 = (now, step)
        elapsed = now - start[0]
        done = step - start[1]
        eta = (
            f", ~{elapsed / done * (total - step):.0f} s left" if 0 < done and step < total else ""
        )
        shown = " ".join([note] * bool(note) + [f"{k}={_fmt(v)}" for k, v in values.items()])
        pct = 100.0 * step / total if total else 100.0
        self.log.info(
            "progress %d/%d (%.1f%%)%s | %.0f s%s",
            step,
            total,
            pct,
            f" {shown}" if shown else "",
            elapsed,
            eta,
        )
        return True

    def progress_report(self, done: int, total: int, what: str = "") -> None:
        """The report of an ``ibrobust.progress.Progress`` (which throttles it): one line
        ``progress done/total (pct) what | elapsed, ~left`` per call."""
        self.progress(done, total, every=0.0, log_metrics=False, note=what)

    def artifact(self, path, folder: str | None = None) -> None:
        if self.run is not None:
            self.run.artifact(path, folder)

    def model(self, path) -> None:
        """Record the model file the job wrote: its run gets the tags ``ibrobust.model_path``
        and ``ibrobust.model_artifact``, and the file under ``model/`` when it is at most
        ``mlflow.model_artifact_max_mb`` MB (decided when the run is synced)."""
        if self.run is not None:
            self.run.model(path)
        size = Path(path).stat().st_size / 2**20
        self.log.info("model %s (%.2f MB)", project_path(path), size)

    def dataset(self, path, context: str) -> None:
        """Record a dataset file the job read as an MLflow dataset input (name, digest,
        source; ``context``: ``training`` or ``evaluation``); a file already recorded by
        this job is not recorded again (jobs over many runs share datasets)."""
        key = (str(Path(path).resolve()), context)
        if key in self._datasets or self.run is None:
            return
        self._datasets.add(key)
        t0 = time.perf_counter()
        self.run.input(path, context)
        self._tracking += time.perf_counter() - t0

    def __exit__(self, exc_type, exc, tb) -> None:
        """End the run record, then say how the job went. The script has written its outputs
        in the block; on a clean exit SIGINT no longer interrupts the job. Ending the record
        is one append to a local file: tracking never fails a job nor costs its outputs."""
        elapsed = time.monotonic() - self._t0
        cpu, peak = cpu_seconds(), peak_rss_mb()  # also for a failed job: what it cost
        if exc is not None:
            self.log.error("failed after %.2f s: %s: %s", elapsed, exc_type.__name__, exc)
        else:  # every output is written: a late SIGINT must not fail the job now
            _signals.ignore_interrupts()
        try:
            if self.run is not None:
                extra = {"job.seconds": elapsed} if exc is None else {}
                self.run.metrics({**extra, "job.cpu_s": cpu, "job.peak_rss_mb": peak})
                status = "FINISHED" if exc is None else "FAILED"
                self.run.end(status)
                if self.run.problem:
                    self.log.warning("run record incomplete (%s): its MLflow run lacks the rest",
                                     self.run.problem)  # fmt: skip
            self.log.info("%s", self.phases())
            if exc is None:
                done = "done in %.2f s (cpu %.2f s, peak %.0f MB)"
                self.log.info(done, time.monotonic() - self._t0, cpu, peak)
                if _is_job_process():  # not a test driving a Job in its own process
                    atexit.register(end_process_now)  # runs first: registered last
        finally:
            for h in self.log.handlers:
                h.flush()
            if exc_type is KeyboardInterrupt:  # lifecycle: Ctrl-C ends the job now
                _lifecycle.end_interrupted_job()

    def phases(self) -> str:
        """``phases wall=.. cpu=.. startup=.. startup_cpu=.. data=.. compute=.. tracking=..
        write=.. max_rss_mb=..`` (seconds): the process's wall and CPU so far, of which
        interpreter start + imports (up to Job()),
        input reads and output writes through ibrobust.io, the run record, and the rest
        (compute); then its peak memory in MB. benchmarks/profile_workflow.py parses this
        line."""
        startup, startup_cpu = self._startup
        job = time.monotonic() - self._t0
        data, write = io.SECONDS["data"], io.SECONDS["write"]
        compute = max(0.0, job - data - write - self._tracking)
        values = {
            "wall": startup + job,
            "cpu": cpu_seconds(),
            "startup": startup,
            "startup_cpu": startup_cpu,
            "data": data,
            "compute": compute,
            "tracking": self._tracking,
            "write": write,
            "max_rss_mb": peak_rss_mb(),
        }
        return phases_line(values)


def _is_job_process() -> bool:
    """The process is a Snakemake script's: its main module holds the ``snakemake`` object
    Snakemake writes into the script. A test that drives a Job inside pytest is not, and
    must keep its own exit status (``os._exit(0)`` at pytest's exit turned a failed test
    run into exit 0: CI passed with failures)."""
    main = sys.modules.get("__main__")
    return main is not None and "snakemake" in vars(main)


def end_process_now() -> None:
    """At the exit of a job whose block ended cleanly: flush the log and the standard streams
    and end the process with status 0 without the interpreter's teardown. After
    ``import torch`` that teardown costs about 0.4 s per job (measured: ``python -c "import
    torch"`` 1.63 s, with ``os._exit(0)`` after the import 1.20 s); every output is written
    before the block ends and the run record ends with it, so
    nothing is left to finalise. An exception raised after the block has set
    ``sys.last_value`` by then: the process takes the normal exit, with its non-zero status.
    (A script calling ``sys.exit`` after its block would lose its status here; no workflow
    script does, and a test keeps it so.)"""
    if getattr(sys, "last_value", None) is not None:
        return
    logging.shutdown()
    flush_std_streams()
    os._exit(0)


def phases_line(values: dict[str, float]) -> str:
    """``phases k=v ...`` (3 decimals): the last timing line of a job's log
    (benchmarks/profile_workflow.py parses it)."""
    return "phases " + " ".join(f"{k}={v:.3f}" for k, v in values.items())


def process_age() -> float:
    """Wall seconds since this process started (Linux /proc; 0.0 where unknown)."""
    try:
        with open("/proc/self/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))


def set_threads(n: int) -> int:
    """Give torch ``n`` threads without importing it: jobs that never touch a tensor (figures,
    tables, the ledger) skip torch's ~2 s import. Set now if the script already imported
    torch, else through the environment torch reads when a later import loads it."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    else:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(n)
    return n


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def peak_rss_mb() -> float:
    """Peak resident memory of the job process in MB (Linux ``ru_maxrss``: KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


EPS_STEP = 1000  # MLflow step of a radius eps: round(eps * EPS_STEP), i.e. eps in 1/1000


def eps_step(eps: float) -> int:
    """The MLflow step a value at radius ``eps`` is logged at: ``round(eps * 1000)`` (steps
    are integers; the metric ``robust_acc.eps`` holds eps itself at the same steps, so the
    UI can draw robust accuracy against it)."""
    return round(float(eps) * EPS_STEP)


def eps_steps(radii) -> dict[float, int]:
    """eps -> :func:`eps_step` for a radius grid; a ValueError naming the radii when two of
    them share a step (closer than 1/1000: their values would overwrite each other)."""
    steps: dict[float, int] = {}
    for eps in map(float, radii):
        clash = [e for e, s in steps.items() if s == eps_step(eps) and e != eps]
        if clash:
            raise ValueError(
                f"radii {clash[0]:g} and {eps:g} share the MLflow step {eps_step(eps)} "
                f"(round(eps * {EPS_STEP})): radii closer than 1/{EPS_STEP} cannot be logged"
            )
        steps[eps] = eps_step(eps)
    return steps


def _mask_record(record: logging.LogRecord) -> bool:
    """Log lines pass through the one secret-masking function (URI passwords etc.)."""
    record.msg, record.args = mask_secrets(record.getMessage()), None
    return True


def _fmt(v: float) -> str:
    v = float(v)
    return f"{v:.4g}" if 1e-3 <= abs(v) < 1e4 or v == 0 else f"{v:.3e}"


NO_STUDY = "shared"  # the study shown for jobs that serve every study (datasets)


def run_name(rule: str, wildcards: dict[str, Any]) -> str:
    """``train seed0/binary/gd_tiny/two_layer_m2/tiny_clusters @fa``: the rule, then the
    wildcard values most specific first, then the study - the MLflow runs table cuts names
    at about 15 characters, so what tells runs apart comes first. Numeric values keep their
    key (seed0, n16). The study and rule are also tags (``ibrobust.study``, ``ibrobust.rule``)
    to filter or group by."""
    values = [
        f"{k}{v}" if str(v).isdigit() else str(v) for k, v in wildcards.items() if k != "study"
    ]
    study = wildcards.get("study", NO_STUDY)
    return f"{rule} {'/'.join(reversed(values)) or '-'} @{study}"


def slurm_job() -> dict[str, str]:
    """SLURM job id and node of this process ({} outside SLURM)."""
    env = os.environ
    out = {}
    if env.get("SLURM_JOB_ID"):
        out["job_id"] = env["SLURM_JOB_ID"]
        node = env.get("SLURMD_NODENAME") or env.get("SLURM_NODELIST")
        if node:
            out["node"] = node
    return out
