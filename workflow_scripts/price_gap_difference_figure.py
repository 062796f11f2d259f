"""Rule price_gap_difference_figure: regime x eps heatmap of the mean over n of
gap(first) - gap(second), robust (paper Fig. 2 right) or clean (paper Fig. 6)."""

from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.studies.price_linear.algorithms import algorithm_label, regime_label
from ibrobust.studies.price_linear.plots import gap_difference_heatmap
from ibrobust.studies.price_linear.tables import gap_difference

p = snakemake.params
with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input), p.runs)
    first, second = p.registry["gap_difference"]
    table = gap_difference(df, first, second, gap=p.gap)
    table.insert(2, "gap", p.gap)
    table.insert(3, "first", first)
    table.insert(4, "second", second)
    for _, r in table.iterrows():
        job.log.info(
            "%s eps=%.2f: mean %s(%s) - %s(%s) = %+.3f",
            r.dataset,
            r.eps_fraction,
            p.gap,
            first,
            p.gap,
            second,
            r.difference,
        )
    fig = gap_difference_heatmap(
        table,
        {d: regime_label(c) for d, c in p.registry["datasets"].items()},
        first=first,
        second=second,
        labels={o: algorithm_label(c) for o, c in p.registry["optimizers"].items()},
        gap=p.gap,
        cmap=p.plots["cmap"],
    )
    save_outputs(job, fig, table, snakemake.output, p.plots["dpi"])
