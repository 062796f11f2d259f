"""Rule prelu_figures: the synthetic half of Study PRELU, one job: robust accuracy vs radius
per alpha and p (paper Fig. 3), neuron alignment (Fig. 2), distances to the ideal classifiers
F and F^(p), and the per-run summary with its means per (p, alpha)."""

from types import SimpleNamespace

import pandas as pd
from _figures import gather_csv, gather_json, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.prelu.plots import ideal_distances, neuron_alignment, robust_accuracy_by_alpha
from ibrobust.studies.prelu.tables import (
    label_runs,
    synthetic_markdown,
    synthetic_means,
    synthetic_summary,
)

p, out, inp = snakemake.params, snakemake.output, snakemake.input
style, spread, dpi = p.plots["style"], p.plots["spread"], p.plots["dpi"]


def files(prefix: str) -> SimpleNamespace:
    return SimpleNamespace(**{ext: out[f"{prefix}_{ext}"] for ext in ("png", "pdf", "csv")})


with Job(snakemake) as job:
    df = label_runs(gather_csv(list(inp.curves), p.runs), p.labels)
    fig = robust_accuracy_by_alpha(df, p.labels["k"], spread=spread, style=style)
    save_outputs(job, fig, df, files("robust"), dpi)

    df = label_runs(pd.read_csv(inp.alignment), p.labels)
    fig = neuron_alignment(df, p.labels["figure_alpha"], signs=p.labels["signs"],
                           cmap=p.plots["cmap"], spread=spread, style=style)  # fmt: skip
    save_outputs(job, fig, df, files("alignment"), dpi)

    analysis = pd.read_csv(inp.analysis)
    df = label_runs(analysis, p.labels)
    fig = ideal_distances(df, spread=spread, style=style)
    save_outputs(job, fig, df, files("distances"), dpi)

    table = synthetic_summary(
        gather_json(list(inp.attack), p.runs),
        analysis.to_dict("records"),
        gather_json(list(inp.train), p.runs),
        p.labels,
    )
    means = synthetic_means(table)
    save_csv(out.summary_csv, table)
    k = p.labels["k"]
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(
            "# Study PRELU, synthetic: mean +- std over seeds per (p, alpha)\n\n"
            f"K = {k}: reference radii 1/sqrt(K) = {k**-0.5:.3f} (ReLU) and sqrt(2)/2 = 0.707 "
            "(pReLU, p > 2). critical_radius = first radius at 50 % worst-case robust "
            "accuracy; robust_acc@r is interpolated linearly on the radius grid. frac_single / "
            "frac_average: active neurons best aligned with one centre / a class average. "
            "dist_F, dist_Fp: min_c ||c f - G|| / ||G|| on points of the centres' unit sphere.\n\n"
            + synthetic_markdown(means)
            + "\n"
        )
    job.log.info("summary:\n%s", means.round(3).to_string(index=False))
    for f in (out.summary_csv, out.summary_md):
        job.artifact(f, "tables")
