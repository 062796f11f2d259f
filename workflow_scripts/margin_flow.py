"""Rule margin_flow: the constant-step run of one seed (Study MARGIN, training.flow): full-batch
GD at one constant lr from the same initialisation as the seed's loss-based run, the gradient
flow's stand-in; every logged step goes to MLflow (step = the GD step) and to the history CSV,
the checkpoints (loss thresholds reached, separation, the end) to one file."""

import time

from _job import Job
from _margin_run import METRICS as MARGIN_METRICS
from _margin_run import save_run, stream_rows

from ibrobust.analysis.margin import require_homogeneous
from ibrobust.device import resolve_device
from ibrobust.io import load_npz, save_json
from ibrobust.studies.margin.experiment import build_net, run_data
from ibrobust.training.flow import flow_config_from_dict, train_flow

# history column -> MLflow metric: MARGIN's, plus the flow's time eta t
METRICS = {**MARGIN_METRICS, "time": "flow_time"}
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

    res = train_flow(net, data.x, data.y, cfg, x_test=data.x_test, y_test=data.y_test,
                     on_step=stream_rows(job, cfg.epochs, METRICS), device=device)  # fmt: skip
    cpu = time.process_time() - c0
    save_run(job, snakemake.output, res)
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
