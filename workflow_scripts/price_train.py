"""Rule price_train: one (regime, n) of Study PRICE-LIN. Draws the training sets and their
exact l_inf margins (one LP per draw), then runs every algorithm's robust ERM on every draw x
eps fraction, each algorithm as one vectorised batch; writes the draws, the per-problem
metrics of every algorithm (column ``optimizer``), the margin ratio at each decade of the
train loss along training (the margin path) and the solutions (the job's model file)."""

import time

import numpy as np
import pandas as pd
import torch
from _job import Job

from ibrobust.io import load_npz, save_csv, save_json, save_npz
from ibrobust.studies.price_linear.experiment import (
    draw_margins,
    problem_grid,
    run_algorithm,
    sample_train_draws,
    teacher_config,
    weights_arrays,
)

p, out = snakemake.params, snakemake.output
with Job(snakemake) as job:
    # the training draws of this (regime, n) and their exact l_inf margins
    cfg = teacher_config(p.dataset, p.n)
    x, y = sample_train_draws(cfg, p.seed, p.draws)  # tensors (R, n, d), (R, n)
    x_np, y_np = x.numpy(), y.numpy()
    t0 = time.monotonic()
    gamma, w_margin = draw_margins(x, y)  # (R,), (R, d): LP per draw
    lp_seconds = time.monotonic() - t0
    draws = np.asarray(p.draws, dtype=np.int64)
    save_npz(out.data, x=x_np, y=y_np, draws=draws, gamma=gamma, w_margin=w_margin)
    save_json(out.meta, {
        "config": p.dataset, "seed": p.seed, "n": p.n, "draws": p.draws,
        "gamma": gamma.tolist(), "lp_seconds": lp_seconds,
        "positive_fraction": (y_np > 0).mean(1).tolist(),
    })  # fmt: skip
    job.log.info("n=%d, %d draws: l_inf margins gamma* %s (LP %.2f s)",
                 p.n, len(p.draws), np.array2string(gamma, precision=4), lp_seconds)  # fmt: skip
    for r, g in zip(p.draws, gamma, strict=True):
        job.metrics({"data.gamma": float(g)}, step=r)

    # every algorithm on every draw x eps fraction
    job.dataset(snakemake.input.test, "evaluation")
    test = load_npz(snakemake.input.test)
    x_test, y_test = torch.from_numpy(test["x_test"]), torch.from_numpy(test["y_test"])
    grid = problem_grid(p.draws, gamma, p.eps_fractions)
    runs = []
    for step, (name, optimizer) in enumerate(p.optimizers.items()):
        runs.append(run_algorithm(name, optimizer, p.stopping, x, y, grid, x_test, y_test))
        job.metrics(runs[-1].job_metrics(), step=step)
        job.log.info("%s", runs[-1].describe(x.shape[0], len(p.eps_fractions)))
    save_csv(out.metrics, pd.concat([r.table for r in runs], ignore_index=True))
    save_csv(out.margin_path, pd.concat([r.path for r in runs], ignore_index=True))
    save_npz(out.weights, **weights_arrays(runs, grid))
    job.model(out.weights)
    for f in (out.meta, out.metrics, out.margin_path):
        job.artifact(f, "price_linear")
