"""Rule images_robust_figure: robust accuracy vs l2 radius per dataset, 2-class vs k-class."""

from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.plotting.images import robust_curves_by_dataset

p = snakemake.params
with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input), p.runs)
    fig = robust_curves_by_dataset(df, spread=p.plots["spread"], style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
