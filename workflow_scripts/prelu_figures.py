"""Rule prelu_figures: the synthetic half of Study PRELU, one job: robust accuracy vs radius
per alpha and p (paper Fig. 3), neuron alignment (Fig. 2), distances to the ideal classifiers
F and F^(p), and the per-run summary with its means per (p, alpha)."""

import pandas as pd
from _figures import figure_files, gather_csv, gather_json, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.prelu.plots import ideal_distances, neuron_alignment, robust_accuracy_by_alpha
from ibrobust.studies.prelu.tables import (
    label_runs,
    synthetic_means,
    synthetic_report,
    synthetic_summary,
)

p, out, inp = snakemake.params, snakemake.output, snakemake.input
style, spread, dpi = p.plots["style"], p.plots["spread"], p.plots["dpi"]


with Job(snakemake) as job:
    df = label_runs(gather_csv(list(inp.curves), p.runs), p.labels)
    fig = robust_accuracy_by_alpha(df, p.labels["k"], spread=spread, style=style)
    save_outputs(job, fig, df, figure_files(out, "robust"), dpi)

    df = label_runs(pd.read_csv(inp.alignment), p.labels)
    fig = neuron_alignment(df, p.labels["figure_alpha"], signs=p.labels["signs"],
                           cmap=p.plots["cmap"], spread=spread, style=style)  # fmt: skip
    save_outputs(job, fig, df, figure_files(out, "alignment"), dpi)

    analysis = pd.read_csv(inp.analysis)
    df = label_runs(analysis, p.labels)
    fig = ideal_distances(df, spread=spread, style=style)
    save_outputs(job, fig, df, figure_files(out, "distances"), dpi)

    table = synthetic_summary(
        gather_json(list(inp.attack), p.runs),
        analysis.to_dict("records"),
        gather_json(list(inp.train), p.runs),
        p.labels,
        refined=gather_json(list(inp.refined), p.refined_runs),
    )
    means = synthetic_means(table)
    save_csv(out.summary_csv, table)
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(synthetic_report(means, p.labels["k"]))
    job.log.info("summary:\n%s", means.round(3).to_string(index=False))
    for f in (out.summary_csv, out.summary_md):
        job.artifact(f, "tables")
