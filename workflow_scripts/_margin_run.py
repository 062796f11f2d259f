"""Helpers shared by the MARGIN training scripts (margin_train: the loss-based run;
margin_flow: the constant-step run): the history columns streamed to MLflow, and the
outputs every such run writes (history CSV, checkpoints, checkpoint table)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ibrobust.io import save_csv, save_torch
from ibrobust.studies.margin.experiment import checkpoint_rows

# history column -> MLflow metric, for every MARGIN run (log10 L only: L itself underflows)
METRICS = {"log10_train_loss": "train.log10_loss", "q_min": "q_min", "rho": "rho",
           "normalized_margin": "normalized_margin", "train_acc": "train.acc",
           "smoothed_normalized_margin": "smoothed_normalized_margin"}  # fmt: skip


def stream_rows(job, epochs: int, metrics: dict[str, str]) -> Callable[[dict], None]:
    """The trainer's per-row callback: progress against ``epochs`` and the row's metrics
    (``metrics``: history column -> MLflow name; absent columns skipped), step = its epoch."""

    def on_row(row: dict) -> None:
        job.progress(row["epoch"], epochs, log_metrics=False, log10_loss=row["log10_train_loss"])
        job.metrics({m: float(row[c]) for c, m in metrics.items() if c in row}, step=row["epoch"])

    return on_row


def save_run(job, output, res) -> None:
    """A MARGIN run's outputs: ``output.history`` (one row per logged epoch),
    ``output.checkpoints`` (the checkpoints' tensors, also the run's model in MLflow) and
    ``output.table`` (one row per checkpoint)."""
    save_csv(output.history, pd.DataFrame(res.history))
    save_torch(output.checkpoints, {c.name: vars(c) for c in res.checkpoints})
    job.model(output.checkpoints)
    save_csv(output.table, checkpoint_rows(res.checkpoints))
