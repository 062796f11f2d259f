"""Rule fa_robust_figure: robust accuracy vs radius, binary / multi-class / robust reference,
one row per binary readout of the k-class nets."""

from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.stages.tables import per_readout
from ibrobust.studies.feature_averaging.plots import robust_curves

p = snakemake.params
with Job(snakemake) as job:
    df = per_readout(gather_csv(list(snakemake.input), p.runs), list(p.readouts))
    df["model_kind"] = df.model.map(p.model_kinds)
    ds = next(iter(p.datasets.values()))
    fig = robust_curves(
        df, p.model_labels, d=ds["d"], k=ds["k"], spread=p.plots["spread"], style=p.plots["style"]
    )
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
