"""The adapter every workflow script uses: snakemake object in, logging + MLflow out.

with Job(snakemake) as job:
    job.log.info("...")                 # one readable line per event in the rule's log
    job.progress(step, loss=v)          # a progress line, at most one per 10 s
    job.metrics({"train.loss": v}, step=t)
    job.artifact(path, "figures")
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import torch
from _tracking import JobRun

from ibrobust.provenance import flatten


class Job:
    def __init__(self, smk: Any, study: str | None = None):
        self.smk = smk
        self.rule = smk.rule
        self.wildcards = dict(smk.wildcards.items())
        torch.set_num_threads(max(1, int(smk.threads)))
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
        self.log.addHandler(handler)
        self._t0 = time.monotonic()
        self.progress_seconds = 10.0
        self._last_progress = -float("inf")

    def __enter__(self) -> Job:
        params = {k: v for k, v in dict(self.smk.params.items()).items() if k != "code"}
        wc = self.wildcards
        name = "/".join(
            [self.rule]
            + [
                str(wc[k])
                for k in ("study", "dataset", "model", "optimizer", "supervision")
                if k in wc
            ]
            + ([f"seed{wc['seed']}"] if "seed" in wc else [])
            + ([wc["grid"]] if "grid" in wc else [])
        )
        tags = {
            "ibrobust.rule": self.rule,
            "ibrobust.kind": "job",
            "ibrobust.code_hash": str(self.smk.params.get("code", "")),
            **{f"wildcard.{k}": str(v) for k, v in wc.items()},
        }
        if "study" in wc:
            tags["ibrobust.study"] = wc["study"]
        self.run = JobRun(
            name, tags, flatten(params), log_file=self.smk.log[0] if self.smk.log else None
        )
        self.log.info(
            "start %s threads=%d mlflow=%s",
            name,
            torch.get_num_threads(),
            "on" if self.run.enabled else "off",
        )
        return self

    def progress(self, step: int, force: bool = False, **values: float) -> None:
        """One readable log line, at most every ``progress_seconds`` (always when ``force``)."""
        now = time.monotonic()
        if force or now - self._last_progress >= self.progress_seconds:
            self._last_progress = now
            shown = "  ".join(f"{k} {v:.4g}" for k, v in values.items())
            self.log.info("step %d  %s  (%.0f s)", step, shown, now - self._t0)

    def metrics(self, values: dict[str, float], step: int = 0) -> None:
        self.run.metrics(values, step)

    def artifact(self, path, folder: str | None = None) -> None:
        self.run.artifact(path, folder)

    def __exit__(self, exc_type, exc, tb) -> None:
        elapsed = time.monotonic() - self._t0
        if exc is None:
            self.run.metrics({"job.seconds": elapsed})
            self.log.info("done in %.2f s", elapsed)
        else:
            self.log.error("failed after %.2f s: %s: %s", elapsed, exc_type.__name__, exc)
        try:
            self.run.end("FINISHED" if exc is None else "FAILED")
        finally:
            for h in self.log.handlers:
                h.flush()
