"""Rule fa_lambda_figure: lambda trajectories and the feature-averaging index (first seed)."""

import numpy as np
import pandas as pd
from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.analysis.averaging_index import feature_averaging_index
from ibrobust.plotting.fa import COMBO, lambda_trajectories

p = snakemake.params
with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input), p.runs)
    fa_rows = []
    for key, g in df.groupby(COMBO + ["supervision", "step"], sort=False):
        lam = g.pivot_table(index="neuron", columns="feature", values="lambda").sort_index()
        same = (
            g.pivot_table(index="neuron", columns="feature", values="head_sign").sort_index()
            == g.pivot_table(index="neuron", columns="feature", values="feature_sign").sort_index()
        )
        fa = feature_averaging_index(lam.to_numpy(), same.to_numpy())
        fa_rows.append(
            dict(
                zip(COMBO + ["supervision", "step"], key, strict=True),
                fa_index_mean=float(np.nanmean(fa)),
            )
        )
    fa = pd.DataFrame(fa_rows)
    df = df.merge(fa, on=COMBO + ["supervision", "step"])
    fig = lambda_trajectories(df, fa, style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
