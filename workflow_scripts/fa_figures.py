"""Rule fa_figures: Study FA's common figures and table, one job: the cosine heatmaps of
neurons vs class features (first seed; paper Fig. 1), robust accuracy vs radius (2-class,
k-class under each binary readout, the robust reference), and the summary (critical radii,
clean accuracy, averaging index and coefficients per setting and readout; 2-class and
reference nets have one score, so their rows repeat under each readout)."""

from _figures import figure_files, gather_csv, gather_json, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.plotting.cosines import cosine_heatmaps
from ibrobust.stages.tables import per_readout
from ibrobust.studies.feature_averaging.plots import robust_curves
from ibrobust.studies.feature_averaging.tables import summary_markdown, summary_means, summary_table

p, out = snakemake.params, snakemake.output
inp = snakemake.input

with Job(snakemake) as job:
    cos = gather_csv(list(inp.cosine), p.cosine_runs)
    fig = cosine_heatmaps(cos, cmap=p.plots["cmap"], style=p.plots["style"])
    save_outputs(job, fig, cos, figure_files(out, "cosine"), p.plots["dpi"])

    curves = per_readout(gather_csv(list(inp.curves), p.attack_runs), list(p.readouts))
    curves["model_kind"] = curves.model.map(p.model_kinds)
    ds = next(iter(p.datasets.values()))
    fig = robust_curves(curves, p.model_labels, d=ds["d"], k=ds["k"],
                        spread=p.plots["spread"], style=p.plots["style"])  # fmt: skip
    save_outputs(job, fig, curves, figure_files(out, "robust"), p.plots["dpi"])

    table = summary_table(
        gather_json(list(inp.attack), p.attack_runs),
        gather_json(list(inp.analysis), p.analysis_runs),
        gather_json(list(inp.decomposition), p.decomposed_runs),
        p.model_labels,
        p.readouts,
        refined=gather_json(list(inp.refined), p.refined_runs),
        metrics=gather_json(list(inp.metrics), p.analysis_runs),
    )
    agg = summary_means(table)
    save_csv(out.summary_csv, table)
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(summary_markdown(agg))
    job.log.info("summary:\n%s", agg.round(3).to_string(index=False))
    for f in (out.summary_csv, out.summary_md):
        job.artifact(f, "tables")
