"""Rule price_train_data: the training draws of one (regime, n) and their exact l_inf margins."""

import time

import numpy as np
from _job import Job

from ibrobust.io import save_json, save_npz
from ibrobust.studies.price_linear.experiment import (
    draw_margins,
    sample_train_draws,
    teacher_config,
)

p = snakemake.params
with Job(snakemake) as job:
    cfg = teacher_config(p.dataset, p.n)
    x, y = sample_train_draws(cfg, p.seed, p.draws)  # (R, n, d), (R, n)
    t0 = time.monotonic()
    gamma, w_margin = draw_margins(x, y)  # (R,), (R, d): LP per draw
    lp_seconds = time.monotonic() - t0
    save_npz(
        snakemake.output.data,
        x=x,
        y=y,
        draws=np.asarray(p.draws, dtype=np.int64),
        gamma=gamma,
        w_margin=w_margin,
    )
    meta = {
        "config": p.dataset,
        "seed": p.seed,
        "n": p.n,
        "draws": p.draws,
        "gamma": gamma.tolist(),
        "lp_seconds": lp_seconds,
        "positive_fraction": (y > 0).double().mean(1).tolist(),
    }
    save_json(snakemake.output.meta, meta)
    job.log.info(
        "n=%d, %d draws: l_inf margins gamma* %s (LP %.2f s)",
        p.n,
        len(p.draws),
        np.array2string(gamma, precision=4),
        lp_seconds,
    )
    for r, g in zip(p.draws, gamma, strict=True):
        job.metrics({"data.gamma": float(g)}, step=r)
    job.metrics({"data.gamma_mean": float(gamma.mean()), "data.lp_seconds": lp_seconds})
    job.artifact(snakemake.output.meta, "data")
