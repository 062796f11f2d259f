"""Rule fa_lambda_figure: lambda trajectories and the feature-averaging index (first seed).

The index per checkpoint is the one the decompose job computed (its ``decomposition.json``
trajectory), not recomputed here from the lambda table."""

import pandas as pd
from _figures import gather_csv, gather_json, save_outputs
from _job import Job

from ibrobust.studies.feature_averaging.plots import COMBO, lambda_trajectories

p = snakemake.params
with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input.lambdas), p.runs)
    fa = pd.DataFrame(
        {**{k: run[k] for k in COMBO + ["supervision"]}, "step": t["step"],
         "fa_index_mean": t["fa_index_mean"]}
        for run in gather_json(list(snakemake.input.decompositions), p.runs)
        for t in run["trajectory"]
    )  # fmt: skip
    df = df.merge(fa, on=COMBO + ["supervision", "step"])
    fig = lambda_trajectories(df, fa, style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
