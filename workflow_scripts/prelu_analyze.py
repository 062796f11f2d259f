"""Rule prelu_analyze: neuron alignment and distances to the ideal classifiers of every
synthetic pReLU net of a study (one table row per run, one per neuron)."""

import pandas as pd
from _job import Job

from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv
from ibrobust.models.registry import load_model
from ibrobust.studies.prelu.experiment import run_analysis

p = snakemake.params
with Job(snakemake) as job:
    rows, tables, datasets = [], [], {}
    for run, data_path, model_path in zip(
        p.runs, snakemake.input.data, snakemake.input.models, strict=True
    ):
        if data_path not in datasets:
            job.dataset(data_path, "evaluation")
            datasets[data_path] = dataset_from_arrays(load_npz(data_path), data_path)
        net = load_model(load_torch(model_path))
        table, summary = run_analysis(net, datasets[data_path], run["seed"], **p.analysis)
        rows.append({**run, **summary})
        tables.append(table.assign(**run))
        job.log.info(
            "%s/%s seed %d: p=%g, %d of %d neurons active, %.0f%% on a single centre; "
            "d(F) %.3f, d(F^p) %.3f",
            run["dataset"],
            run["model"],
            run["seed"],
            summary["p"],
            summary["n_active"],
            summary["n_neurons"],
            100 * summary["frac_single"],
            summary["dist_F"],
            summary["dist_Fp"],
        )
    runs = pd.DataFrame(rows)
    for model, g in runs.groupby("model", sort=False):
        job.metrics(
            {
                f"analysis.{model}.{k}": float(g[k].mean())
                for k in ("frac_single", "dist_F", "dist_Fp")
            }
        )
    save_csv(snakemake.output.runs, runs)
    save_csv(snakemake.output.alignment, pd.concat(tables, ignore_index=True))
    for f in (snakemake.output.runs, snakemake.output.alignment):
        job.artifact(f, "analysis")
