"""Rule margin_train: one homogeneous net trained with the loss-based learning rate (Study
MARGIN); every accepted epoch goes to MLflow (step = epoch) and to the history CSV, the
checkpoints at the loss thresholds and the last epoch to one file."""

import time

from _job import Job
from _margin_run import METRICS as MARGIN_METRICS
from _margin_run import save_run, stream_rows

from ibrobust.device import resolve_device
from ibrobust.io import load_npz, save_json
from ibrobust.studies.margin.experiment import build_net, run_data, train_config
from ibrobust.training.margin import train_margin

# history column -> MLflow metric: MARGIN's, plus the test accuracy and the schedule's state
METRICS = {**MARGIN_METRICS, "test_acc": "test.acc", "alpha": "alpha", "log10_eta": "log10_eta"}
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

    res = train_margin(net, data.x, data.y, cfg, p.seed, x_test=data.x_test, y_test=data.y_test,
                       on_epoch=stream_rows(job, cfg.epochs, METRICS), device=device)  # fmt: skip
    cpu = time.process_time() - c0
    save_run(job, snakemake.output, res)
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
