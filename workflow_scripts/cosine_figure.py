"""Rule cosine_figure: cosine heatmaps of neurons vs class features, binary vs multi-class (first seed)."""

from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.plotting.cosines import cosine_heatmaps

p = snakemake.params
with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input), p.runs)
    fig = cosine_heatmaps(df, cmap=p.plots["cmap"], style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
