"""Rule dataset: make one dataset file (synthetic draw or real-image subset) for one seed."""

import hashlib
from pathlib import Path

from _job import Job

from ibrobust.data.registry import make_dataset
from ibrobust.io import save_json, save_npz

p = snakemake.params
with Job(snakemake) as job:
    arrays, meta = make_dataset(p.dataset, p.seed, p.data_root)
    save_npz(snakemake.output.data, **arrays)
    meta = {
        "config": p.dataset,
        "seed": p.seed,
        "sha256": hashlib.sha256(Path(snakemake.output.data).read_bytes()).hexdigest(),
        "shapes": {k: list(v.shape) for k, v in arrays.items()},
        **meta,
    }
    save_json(snakemake.output.meta, meta)
    job.log.info(
        "%s dataset: train %s, test %s; train class counts %s",
        p.dataset["kind"],
        meta["shapes"]["train_x"],
        meta["shapes"]["test_x"],
        meta.get("train_class_counts"),
    )
    job.metrics({f"data.{k}": float(v) for k, v in meta.items() if isinstance(v, int | float)})
    job.artifact(snakemake.output.meta, "data")
