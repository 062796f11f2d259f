"""Rule prelu_table1: our MNIST robust accuracies beside the paper's Table 1, column by column."""

from _figures import gather_json
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.prelu.tables import table1, table1_markdown

p = snakemake.params
with Job(snakemake) as job:
    table = table1(
        gather_json(list(snakemake.input.attack), p.attack_runs),
        gather_json(list(snakemake.input.train), p.runs),
        p.labels,
    )
    save_csv(snakemake.output.csv, table)
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(table1_markdown(table) + "\n")
    job.log.info("table 1:\n%s", table.round(3).to_string(index=False))
    for f in (snakemake.output.csv, snakemake.output.md):
        job.artifact(f, "tables")
