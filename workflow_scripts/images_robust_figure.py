"""Rule images_robust_figure: robust accuracy vs l2 radius per dataset, 2-class vs k-class,
one row per dataset and binary readout."""

from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.stages.tables import per_readout
from ibrobust.studies.feature_averaging_images.plots import robust_curves_by_dataset

p = snakemake.params
with Job(snakemake) as job:
    df = per_readout(gather_csv(list(snakemake.input), p.runs), list(p.readouts))
    fig = robust_curves_by_dataset(df, spread=p.plots["spread"], style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
