"""Rule price_test_data: the teacher w* and the test set of one PRICE-LIN regime (shared by
every n, eps and algorithm; the paper's "same test dataset across n and eps")."""

import hashlib
from pathlib import Path

from _job import Job

from ibrobust.io import save_json, save_npz
from ibrobust.studies.price_linear.experiment import sample_test_set, teacher_config

p = snakemake.params
with Job(snakemake) as job:
    cfg = teacher_config(p.dataset)
    w_star, x, y = sample_test_set(cfg, p.seed)  # (d,), (n_test, d), (n_test,)
    save_npz(snakemake.output.data, w_star=w_star, x_test=x, y_test=y)
    meta = {
        "config": p.dataset,
        "seed": p.seed,
        "sha256": hashlib.sha256(Path(snakemake.output.data).read_bytes()).hexdigest(),
        "teacher_nonzeros": int((w_star != 0).sum()),
        "test_mean_nonzeros_per_x": float((x != 0).sum(1).double().mean()),
        "test_positive_fraction": float((y > 0).double().mean()),
    }
    save_json(snakemake.output.meta, meta)
    job.log.info(
        "teacher with %d non-zeros, %d test points with %.1f non-zeros each, %.3f positive",
        meta["teacher_nonzeros"],
        cfg.n_test,
        meta["test_mean_nonzeros_per_x"],
        meta["test_positive_fraction"],
    )
    job.metrics(
        {
            "data.teacher_nonzeros": meta["teacher_nonzeros"],
            "data.test_mean_nonzeros_per_x": meta["test_mean_nonzeros_per_x"],
            "data.test_positive_fraction": meta["test_positive_fraction"],
        }
    )
    job.artifact(snakemake.output.meta, "data")
