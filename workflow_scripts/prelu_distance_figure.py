"""Rule prelu_distance_figure: distance of the trained nets to F and F^(p) vs alpha."""

import pandas as pd
from _figures import save_outputs
from _job import Job

from ibrobust.experiments.prelu import label_runs
from ibrobust.plotting.prelu import ideal_distances

p = snakemake.params
with Job(snakemake) as job:
    df = label_runs(pd.read_csv(snakemake.input[0]), p.labels)
    fig = ideal_distances(df, spread=p.plots["spread"], style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
