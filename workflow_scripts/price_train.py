"""Rule price_train: robust ERM of one algorithm on every draw x eps fraction of one
(regime, n), as one vectorised batch; per-problem metrics and the solutions."""

import time

import torch
from _job import Job

from ibrobust.io import load_npz, save_csv, save_npz
from ibrobust.studies.price_linear.experiment import (
    JOB_METRICS,
    algorithm_of,
    erm_config,
    metrics_table,
    problem_grid,
    train_problems,
)

p = snakemake.params
with Job(snakemake) as job:
    train = load_npz(snakemake.input.train)
    test = load_npz(snakemake.input.test)
    x, y = torch.from_numpy(train["x"]), torch.from_numpy(train["y"])  # (R, n, d), (R, n)
    grid = problem_grid(train["draws"].tolist(), train["gamma"], p.eps_fractions)
    cfg = erm_config(p.optimizer, p.stopping)
    job.log.info(
        "%s on %d problems (%d draws x %d eps fractions), n=%d d=%d; stop at loss < %g or %d steps",
        cfg.algorithm, len(grid), x.shape[0], len(p.eps_fractions), x.shape[1], x.shape[2],
        cfg.loss_threshold, cfg.max_iters,
    )  # fmt: skip
    t0 = time.monotonic()
    result = train_problems(x, y, grid, cfg)
    seconds = time.monotonic() - t0
    table = metrics_table(
        result, grid, x, y, torch.from_numpy(test["x_test"]), torch.from_numpy(test["y_test"])
    )
    table.insert(0, "algorithm", algorithm_of(p.optimizer))
    save_csv(snakemake.output.metrics, table)
    save_npz(snakemake.output.weights, w=result.w, draw=grid.draw,
             eps_fraction=grid.eps_fraction, eps=grid.eps)  # fmt: skip
    means = table.drop(columns="algorithm").astype(float).groupby("eps_fraction").mean()
    for i, (frac, row) in enumerate(means.iterrows()):
        job.metrics({"eps_fraction": frac, **{m: row[c] for m, c in JOB_METRICS.items()}}, step=i)
        job.log.info(
            "eps=%.2f gamma*: robust gap %.3f, robust test acc %.3f, clean test acc %.3f, "
            "iters %.0f, converged %.2f",
            frac, row.robust_gap, row.test_robust_acc, row.test_clean_acc, row.iters, row.converged,
        )  # fmt: skip
    job.metrics({"train.seconds": seconds,
                 "converged_fraction": float(result.converged.double().mean()),
                 "diverged_fraction": float(result.diverged.double().mean())})  # fmt: skip
    job.log.info(
        "trained in %.2f s; %d of %d problems reached the loss threshold, %d diverged",
        seconds, int(result.converged.sum()), len(grid), int(result.diverged.sum()),
    )  # fmt: skip
    job.artifact(snakemake.output.metrics, "price_linear")
