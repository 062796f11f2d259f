"""Rule cluster_data: draw the synthetic cluster dataset of one seed."""

import hashlib
from pathlib import Path

import torch
from _job import Job

from ibrobust.data.clusters import config_from_dict, make_cluster_data
from ibrobust.io import save_json, save_npz

with Job(snakemake) as job:
    cfg = config_from_dict(snakemake.params.dataset)
    data = make_cluster_data(cfg, snakemake.params.seed)
    save_npz(snakemake.output.data, **data.arrays())
    counts = data.train.fine.bincount(minlength=cfg.k).tolist()
    meta = {
        "config": snakemake.params.dataset,
        "seed": snakemake.params.seed,
        "sha256": hashlib.sha256(Path(snakemake.output.data).read_bytes()).hexdigest(),
        "train_cluster_counts": counts,
        "train_positive_fraction": float((data.train.y > 0).float().mean()),
        # orthogonality check: max |<mu_i, mu_j> - norm^2 [i == j]|
        "max_abs_mean_inner": float(
            (data.means @ data.means.T - cfg.norm**2 * torch.eye(cfg.k)).abs().max()
        ),
    }
    save_json(snakemake.output.meta, meta)
    job.log.info(
        "drew d=%d k=%d n_train=%d n_test=%d; cluster counts %s",
        cfg.d,
        cfg.k,
        cfg.n_train,
        cfg.n_test,
        counts,
    )
    job.metrics(
        {
            "data.train_positive_fraction": meta["train_positive_fraction"],
            "data.max_abs_mean_inner": meta["max_abs_mean_inner"],
        }
    )
    job.artifact(snakemake.output.meta, "data")
