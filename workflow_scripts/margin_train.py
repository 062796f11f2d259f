"""Rule margin_train: one homogeneous net trained with the loss-based learning rate (Study
MARGIN); every accepted epoch goes to MLflow (step = epoch) and to the history CSV, the
checkpoints at the loss thresholds and the last epoch to one file."""

import time

import pandas as pd
from _job import Job

from ibrobust.device import resolve_device
from ibrobust.io import load_npz, save_csv, save_json, save_torch
from ibrobust.studies.margin.experiment import build_net, checkpoint_rows, run_data, train_config
from ibrobust.training.margin import train_margin

# history column -> MLflow metric (log10 L only: L itself underflows float64)
METRICS = {"log10_train_loss": "train.log10_loss", "q_min": "q_min", "rho": "rho",
           "normalized_margin": "normalized_margin", "train_acc": "train.acc",
           "smoothed_normalized_margin": "smoothed_normalized_margin", "test_acc": "test.acc",
           "alpha": "alpha", "log10_eta": "log10_eta"}  # fmt: skip
p = snakemake.params
with Job(snakemake) as job:
    device = resolve_device(p.device)  # before any work: device: cuda without CUDA fails here
    tr = dict(p.training)
    model, sup = tr.pop("model"), tr.pop("supervision")
    job.dataset(snakemake.input.data, "training")
    data = run_data(load_npz(snakemake.input.data), sup)
    cfg = train_config(tr, len(data.x))
    net = build_net(model, data, sup, p.seed, dtype=cfg.torch_dtype)
    job.log.info("%s on %d points, %s, batch %d, alpha(0) %g, %d epochs, thresholds %s, on %s",
                 model["kind"], len(data.x), cfg.dtype, cfg.batch_size, cfg.schedule.alpha,
                 cfg.epochs, list(cfg.checkpoint_log10_losses), device)  # fmt: skip
    c0 = time.process_time()

    def on_epoch(row):
        job.progress(
            row["epoch"], cfg.epochs, log_metrics=False, log10_loss=row["log10_train_loss"]
        )
        job.metrics({m: float(row[c]) for c, m in METRICS.items() if c in row}, step=row["epoch"])

    res = train_margin(net, data.x, data.y, cfg, p.seed, x_test=data.x_test,
                       y_test=data.y_test, on_epoch=on_epoch, device=device)  # fmt: skip
    cpu = time.process_time() - c0
    save_csv(snakemake.output.history, pd.DataFrame(res.history))
    save_torch(snakemake.output.checkpoints, {c.name: vars(c) for c in res.checkpoints})
    job.model(snakemake.output.checkpoints)
    save_csv(snakemake.output.table, checkpoint_rows(res.checkpoints))
    meta = dict(stop_reason=res.stop_reason, rollbacks=res.rollbacks, seconds=res.seconds,
                cpu_seconds=cpu, epochs=res.history[-1]["epoch"], n_train=len(data.x),
                batch_size=cfg.batch_size, dtype=cfg.dtype)  # fmt: skip
    save_json(snakemake.output.meta, meta)
    job.metrics({"train.seconds": res.seconds, "train.cpu_seconds": cpu,
                 "train.rollbacks": float(res.rollbacks)})  # fmt: skip
    job.log.info("stop %s after %d epochs (%d redone), log10 L %.2f, %.0f CPU s; checkpoints %s",
                 res.stop_reason, meta["epochs"], res.rollbacks,
                 res.history[-1]["log10_train_loss"], cpu,
                 [(c.name, c.epoch) for c in res.checkpoints])  # fmt: skip
    job.artifact(snakemake.output.table, "margin")
