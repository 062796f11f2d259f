"""Rules margin_kkt / margin_kkt_constant: per checkpoint of one run (Study MARGIN, either
schedule), the KKT residual 1 - cos(theta, -grad L) on the whole training set in float64 and
the net's homogeneity degree L. A job of its own, reading the saved checkpoints: a change to
it reruns only it (seconds), never the training."""

import time

import pandas as pd
from _job import Job

from ibrobust.analysis.margin import kkt_residual, require_homogeneous
from ibrobust.io import load_npz, load_torch, save_csv
from ibrobust.studies.margin.experiment import load_checkpoints, run_data

p = snakemake.params
with Job(snakemake) as job:
    job.dataset(snakemake.input.data, "evaluation")
    data = run_data(load_npz(snakemake.input.data), p.supervision)
    saved = load_torch(snakemake.input.checkpoints)
    nets = load_checkpoints(saved, p.model, data, p.supervision, p.seed)  # float64 nets
    c0 = time.process_time()
    rows = []
    for name, net in nets.items():
        r = kkt_residual(net, data.x, data.y)
        rows.append(dict(name=name, epoch=int(saved[name]["epoch"]), kkt_residual=r,
                         homogeneity=require_homogeneous(net, "model")))  # fmt: skip
        job.log.info("%s (epoch %d): KKT residual %.4g", name, rows[-1]["epoch"], r)
    save_csv(snakemake.output.kkt, pd.DataFrame(rows))
    job.metrics({"kkt.cpu_seconds": time.process_time() - c0})
