"""Rule prelu_distance_figure: distance of the trained nets to F and F^(p) vs alpha."""

import pandas as pd
from _figures import save_outputs
from _job import Job

from ibrobust.studies.prelu.plots import ideal_distances
from ibrobust.studies.prelu.tables import label_runs

p = snakemake.params
with Job(snakemake) as job:
    df = label_runs(pd.read_csv(snakemake.input[0]), p.labels)
    fig = ideal_distances(df, spread=p.plots["spread"], style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
