"""Rule price_linear_figures: Study PRICE-LIN's figures and tables, one job: robust gap vs n
per algorithm, ERM and robust ERM side by side (paper Fig. 1 bottom, 2 left, 5); the
regime x eps heatmaps of the mean over n of gap(first) - gap(second), robust (Fig. 2 right)
and clean (Fig. 6); the cosines between the algorithms' solutions vs eps / gamma* (they
approach 1 as eps -> gamma*, Lemma C.4); the per-setting means over draws and the study's
numbers; the runs' margin paths in one table (the limit claims' trend)."""

from _figures import figure_files, gather_csv, save_outputs
from _job import Job

from ibrobust.io import atomic_path, load_npz, save_csv
from ibrobust.studies.price_linear.algorithms import algorithm_label, regime_label
from ibrobust.studies.price_linear.plots import cosine_vs_fraction, gap_difference_heatmap, gap_vs_n
from ibrobust.studies.price_linear.tables import (
    gap_difference_table,
    mean_over_draws,
    run_cosines,
    summary_markdown,
)

p, out = snakemake.params, snakemake.output
reg = p.registry
regimes = {d: regime_label(c) for d, c in reg["datasets"].items()}
labels = {o: algorithm_label(c) for o, c in reg["optimizers"].items()}
first, second = reg["gap_difference"]

with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input.metrics), p.runs)
    fig = gap_vs_n(df, regimes, labels, gap="robust_gap", spread=p.plots["spread"],
                   style=p.plots["style"])  # fmt: skip
    save_outputs(job, fig, df, figure_files(out, "gap"), p.plots["dpi"])

    for gap in ("robust", "clean"):
        table = gap_difference_table(df, first, second, gap)
        for r in table.itertuples():
            job.log.info("%s eps=%.2f: mean %s_gap(%s) - %s_gap(%s) = %+.3f",
                         r.dataset, r.eps_fraction, gap, first, gap, second, r.difference)  # fmt: skip
        fig = gap_difference_heatmap(table, regimes, first=first, second=second, labels=labels,
                                     gap=f"{gap}_gap", cmap=p.plots["cmap"])  # fmt: skip
        save_outputs(job, fig, table, figure_files(out, gap), p.plots["dpi"])

    cosines = run_cosines([load_npz(f) for f in snakemake.input.weights], p.runs)
    for (a, b, f), c in cosines.groupby(["optimizer_a", "optimizer_b", "eps_fraction"]).cosine:
        job.log.info("cos(%s, %s) at eps=%.2f gamma*: mean %.3f", a, b, f, c.mean())
    fig = cosine_vs_fraction(cosines, regimes, labels, spread=p.plots["spread"],
                             style=p.plots["style"])  # fmt: skip
    save_outputs(job, fig, cosines, figure_files(out, "cosines"), p.plots["dpi"])

    save_csv(out.summary_csv, mean_over_draws(df))
    md = summary_markdown(df, cosines, first=first, second=second, dataset_labels=regimes,
                          optimizer_labels=labels)  # fmt: skip
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(md + "\n")
    job.log.info("summary:\n%s", md)
    save_csv(out.margin_path_csv, gather_csv(list(snakemake.input.margin_path), p.runs))
    for f in (out.summary_csv, out.summary_md, out.margin_path_csv):
        job.artifact(f, "tables")
