"""Rule margin_flow: the constant-step run of one seed (Study MARGIN, training.flow): full-batch
GD at one constant lr from the same initialisation as the seed's loss-based run, the gradient
flow's stand-in; every logged step goes to MLflow (step = the GD step) and to the history CSV,
the checkpoints (loss thresholds reached, separation, the end) to one file."""

import time

import pandas as pd
from _job import Job

from ibrobust.analysis.margin import require_homogeneous
from ibrobust.device import resolve_device
from ibrobust.io import load_npz, save_csv, save_json, save_torch
from ibrobust.studies.margin.experiment import build_net, checkpoint_rows, run_data
from ibrobust.training.flow import flow_config_from_dict, train_flow

# history column -> MLflow metric (log10 L only: L itself is never recorded)
METRICS = {"log10_train_loss": "train.log10_loss", "q_min": "q_min", "rho": "rho",
           "normalized_margin": "normalized_margin", "train_acc": "train.acc",
           "smoothed_normalized_margin": "smoothed_normalized_margin", "time": "flow_time"}  # fmt: skip
p = snakemake.params
with Job(snakemake) as job:
    device = resolve_device(p.device)  # before any work: device: cuda without CUDA fails here
    fl = dict(p.flow)
    model, sup = fl.pop("model"), fl.pop("supervision")
    cfg = flow_config_from_dict(fl)
    job.dataset(snakemake.input.data, "training")
    data = run_data(load_npz(snakemake.input.data), sup)
    net = build_net(model, data, sup, p.seed, dtype=cfg.torch_dtype)  # the loss-based run's init
    job.log.info("%s on %d points, %s, full batch, constant lr %g, %d steps, log every %d, on %s",
                 model["kind"], len(data.x), cfg.dtype, cfg.lr, cfg.epochs, cfg.log_every,
                 device)  # fmt: skip
    c0 = time.process_time()

    def on_step(row):
        job.progress(
            row["epoch"], cfg.epochs, log_metrics=False, log10_loss=row["log10_train_loss"]
        )
        job.metrics({m: float(row[c]) for c, m in METRICS.items() if c in row}, step=row["epoch"])

    res = train_flow(net, data.x, data.y, cfg, x_test=data.x_test, y_test=data.y_test,
                     on_step=on_step, device=device)  # fmt: skip
    cpu = time.process_time() - c0
    save_csv(snakemake.output.history, pd.DataFrame(res.history))
    save_torch(snakemake.output.checkpoints, {c.name: vars(c) for c in res.checkpoints})
    job.model(snakemake.output.checkpoints)
    save_csv(snakemake.output.table, checkpoint_rows(res.checkpoints))
    meta = dict(schedule="constant", stop_reason=res.stop_reason, seconds=res.seconds,
                cpu_seconds=cpu, epochs=res.history[-1]["epoch"], lr=cfg.lr,
                n_train=len(data.x), batch_size=len(data.x), dtype=cfg.dtype,
                homogeneity=require_homogeneous(net, "model"))  # fmt: skip
    save_json(snakemake.output.meta, meta)
    job.metrics({"train.seconds": res.seconds, "train.cpu_seconds": cpu})
    job.log.info("stop %s after %d steps (t = %g), log10 L %.3f, %.0f CPU s; checkpoints %s",
                 res.stop_reason, meta["epochs"], meta["epochs"] * cfg.lr,
                 res.history[-1]["log10_train_loss"], cpu,
                 [(c.name, c.epoch) for c in res.checkpoints])  # fmt: skip
    job.artifact(snakemake.output.table, "margin")
