"""Rule price_gap_figure: robust generalization gap vs n per algorithm, ERM and robust ERM
side by side (one column per eps), one row per regime (paper Fig. 1 bottom, 2 left, 5)."""

from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.studies.price_linear.algorithms import algorithm_label, regime_label
from ibrobust.studies.price_linear.plots import gap_vs_n

p = snakemake.params
with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input), p.runs)
    reg = p.registry
    fig = gap_vs_n(
        df,
        {d: regime_label(c) for d, c in reg["datasets"].items()},
        {o: algorithm_label(c) for o, c in reg["optimizers"].items()},
        gap="robust_gap",
        spread=p.plots["spread"],
        style=p.plots["style"],
    )
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
