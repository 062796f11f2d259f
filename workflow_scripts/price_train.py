"""Rule price_train: one (regime, n) of Study PRICE-LIN. Draws the training sets and their
exact l_inf margins (one LP per draw), then runs every algorithm's robust ERM on every draw x
eps fraction, each algorithm as one vectorised batch; writes the draws, the per-problem
metrics of every algorithm (column ``optimizer``) and the solutions."""

import time

import numpy as np
import pandas as pd
import torch
from _job import Job

from ibrobust.io import load_npz, save_csv, save_json, save_npz
from ibrobust.studies.price_linear.experiment import (
    JOB_METRICS,
    algorithm_of,
    draw_margins,
    erm_config,
    metrics_table,
    problem_grid,
    sample_train_draws,
    teacher_config,
    train_problems,
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
    test = load_npz(snakemake.input.test)
    x_test, y_test = torch.from_numpy(test["x_test"]), torch.from_numpy(test["y_test"])
    grid = problem_grid(p.draws, gamma, p.eps_fractions)
    tables, solutions = [], {}
    for step, (name, optimizer) in enumerate(p.optimizers.items()):
        erm = erm_config(optimizer, p.stopping)
        t0 = time.monotonic()
        result = train_problems(x, y, grid, erm)
        seconds = time.monotonic() - t0
        table = metrics_table(result, grid, x, y, x_test, y_test)
        table.insert(0, "optimizer", name)
        table.insert(1, "algorithm", algorithm_of(optimizer))
        tables.append(table)
        solutions[name] = result.w.numpy()
        means = table.drop(columns=["optimizer", "algorithm"]).astype(float).mean()
        job.metrics({f"{name}.{m}": means[c] for m, c in JOB_METRICS.items()}
                    | {f"{name}.train.seconds": seconds}, step=step)  # fmt: skip
        job.log.info(
            "%s (%s, %d problems: %d draws x %d eps fractions): %.2f s; %d reached the loss "
            "threshold %g, %d diverged; mean robust gap %.3f",
            name, erm.algorithm, len(grid), x.shape[0], len(p.eps_fractions), seconds,
            int(result.converged.sum()), erm.loss_threshold, int(result.diverged.sum()),
            means.robust_gap,
        )  # fmt: skip
    save_csv(out.metrics, pd.concat(tables, ignore_index=True))
    save_npz(
        out.weights,
        w=np.stack([solutions[o] for o in p.optimizers]),  # (algorithms, problems, d)
        optimizer=np.asarray(list(p.optimizers)),
        draw=np.asarray(grid.draw),
        eps_fraction=np.asarray(grid.eps_fraction),
        eps=np.asarray(grid.eps),
    )
    for f in (out.meta, out.metrics):
        job.artifact(f, "price_linear")
