"""Rule decompose: lambda decomposition of a two-layer net's neurons over its checkpoints."""

import pandas as pd
from _job import Job

from ibrobust.analysis.decomposition import decompose_checkpoints
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_json

with Job(snakemake) as job:
    job.dataset(snakemake.input.data, "evaluation")
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)
    try:
        rows, trajectory = decompose_checkpoints(
            load_torch(snakemake.input.model), data, snakemake.params.supervision
        )
    except ValueError as err:
        raise ValueError(f"{snakemake.input.model} on {snakemake.input.data}: {err}") from None
    for t in trajectory:
        metrics = {
            "analysis.fa_index": t["fa_index_mean"],
            "analysis.residual_max": t["residual_max"],
        }
        job.metrics(metrics, step=t["step"])
    summary = {
        "supervision": snakemake.params.supervision,
        "basis": rows[-1]["basis"],
        "fa_index_final": trajectory[-1]["fa_index_mean"],
        "other_class_ratio_final": trajectory[-1]["other_class_ratio_mean"],
        "decoupling_ratio_final": trajectory[-1]["decoupling_ratio_mean"],
        "residual_max": max(t["residual_max"] for t in trajectory),
        "trajectory": trajectory,
    }
    job.log.info(
        "final FA index %.3f, residual max %.2e (%s basis)",
        summary["fa_index_final"], summary["residual_max"], summary["basis"],
    )  # fmt: skip
    save_csv(snakemake.output.lambdas, pd.DataFrame(rows))
    save_json(snakemake.output.summary, summary)
    job.artifact(snakemake.output.summary, "analysis")
