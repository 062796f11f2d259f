"""Rule prelu_alignment_figure: active neurons vs centres and class averages; single-centre fraction vs alpha."""

import pandas as pd
from _figures import save_outputs
from _job import Job

from ibrobust.studies.prelu.plots import neuron_alignment
from ibrobust.studies.prelu.tables import label_runs

p = snakemake.params
with Job(snakemake) as job:
    df = label_runs(pd.read_csv(snakemake.input[0]), p.labels)
    fig = neuron_alignment(
        df,
        p.labels["figure_alpha"],
        signs=p.labels["signs"],
        cmap=p.plots["cmap"],
        spread=p.plots["spread"],
        style=p.plots["style"],
    )
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
