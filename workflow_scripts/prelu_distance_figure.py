"""Rule prelu_distance_figure: distance of the trained nets to F and F^(p) vs alpha."""

import pandas as pd
from _figures import gather_json, save_outputs
from _job import Job

from ibrobust.experiments.prelu import label_runs
from ibrobust.plotting.prelu import ideal_distances

p = snakemake.params
with Job(snakemake) as job:
    df = label_runs(pd.DataFrame(gather_json(list(snakemake.input), p.runs)), p.labels)
    fig = ideal_distances(df, spread=p.plots["spread"], style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
