"""Rule prelu_summary_table: per run and per (p, alpha) the robust accuracy, alignment and distances."""

import pandas as pd
from _figures import gather_json
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.prelu.tables import synthetic_markdown, synthetic_means, synthetic_summary

p = snakemake.params
with Job(snakemake) as job:
    table = synthetic_summary(
        gather_json(list(snakemake.input.attack), p.runs),
        pd.read_csv(snakemake.input.analysis).to_dict("records"),
        gather_json(list(snakemake.input.train), p.runs),
        p.labels,
    )
    means = synthetic_means(table)
    save_csv(snakemake.output.csv, table)
    k = p.labels["k"]
    with atomic_path(snakemake.output.md) as tmp:
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
    for f in (snakemake.output.csv, snakemake.output.md):
        job.artifact(f, "tables")
