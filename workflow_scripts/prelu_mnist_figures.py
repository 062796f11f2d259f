"""Rule prelu_mnist_figures: the MNIST half of Study PRELU, one job: robust accuracy per p
and norm (paper Table 1's columns, every radius of the grid) and Table 1 itself beside the
paper's and the official pretrained models' numbers."""

from _figures import gather_csv, gather_json, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.prelu.plots import mnist_robust_accuracy
from ibrobust.studies.prelu.tables import label_runs, table1, table1_markdown

p, out, inp = snakemake.params, snakemake.output, snakemake.input
with Job(snakemake) as job:
    df = label_runs(gather_csv(list(inp.curves), p.attack_runs), p.labels)
    fig = mnist_robust_accuracy(df, style=p.plots["style"])
    save_outputs(job, fig, df, out, p.plots["dpi"])

    table = table1(gather_json(list(inp.attack), p.attack_runs),
                   gather_json(list(inp.train), p.runs), p.labels)  # fmt: skip
    save_csv(out.table_csv, table)
    with atomic_path(out.table_md) as tmp:
        tmp.write_text(table1_markdown(table) + "\n")
    job.log.info("table 1:\n%s", table.round(3).to_string(index=False))
    for f in (out.table_csv, out.table_md):
        job.artifact(f, "tables")
