"""Rule price_summary_table: per-setting means over draws (CSV) and the study's numbers (md)."""

import pandas as pd
from _figures import gather_csv
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.price_linear.algorithms import algorithm_label, regime_label
from ibrobust.studies.price_linear.tables import mean_over_draws, summary_markdown

p = snakemake.params
with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input.metrics), p.runs)
    cosines = pd.read_csv(snakemake.input.cosines)
    reg = p.registry
    first, second = reg["gap_difference"]
    save_csv(snakemake.output.csv, mean_over_draws(df))
    md = summary_markdown(
        df,
        cosines,
        first=first,
        second=second,
        dataset_labels={d: regime_label(c) for d, c in reg["datasets"].items()},
        optimizer_labels={o: algorithm_label(c) for o, c in reg["optimizers"].items()},
    )
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(md + "\n")
    job.log.info("summary:\n%s", md)
    for f in (snakemake.output.csv, snakemake.output.md):
        job.artifact(f, "tables")
