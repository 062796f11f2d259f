"""Rule fa_scaling_figure: critical radius (worst case per readout) vs each swept dataset
key, and the fitted log-log slopes per line (scaling_summary); each radius with its read-off
bracket (the grid's cell, or rule fa_refine's bisected bracket where refined); with
``scaling.decompose`` the table carries each decomposed net's final lambdas."""

from _figures import gather_csv, gather_json, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.stages.tables import per_readout
from ibrobust.studies.feature_averaging.plots import critical_radius_scaling
from ibrobust.studies.feature_averaging.scaling import scaling_slopes, scaling_table

p, out = snakemake.params, snakemake.output
with Job(snakemake) as job:
    curves = per_readout(gather_csv(list(snakemake.input.curves), p.runs), list(p.readouts))
    refined = gather_json(list(snakemake.input.refined), p.refined_runs)
    decs = gather_json(list(snakemake.input.decompositions), p.decomposed_runs)
    table = scaling_table(
        curves,
        p.datasets,
        p.sweeps,
        p.model_labels,
        refined=refined,
        decompositions=decs if p.decompose else None,
    )
    slopes = scaling_slopes(table)
    job.log.info("slopes:\n%s", slopes.round(3).to_string(index=False))
    fig = critical_radius_scaling(table, style=p.plots["style"])
    save_outputs(job, fig, table, out, p.plots["dpi"])
    save_csv(out.slopes_csv, slopes)
    with atomic_path(out.slopes_md) as tmp:
        tmp.write_text(
            "# Critical radius vs the swept keys: fitted log-log slopes\n\n"
            "slope = least-squares slope of log(mean critical radius over seeds) on log(value); "
            "theory: sqrt(d/k) has slope 1/2 in d and -1/2 in k; sqrt(d)/2 and sqrt(d/2) have "
            "1/2 in d and 0 in k. 2-class and reference nets have one score: their lines repeat "
            "under each readout.\n\n" + slopes.round(3).to_markdown(index=False) + "\n"
        )
    for f in (out.slopes_csv, out.slopes_md):
        job.artifact(f, "tables")
