"""Rule prelu_mnist_figure: MNIST robust accuracy vs radius per norm and task, beside Table 1."""

from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.studies.prelu.plots import mnist_robust_accuracy
from ibrobust.studies.prelu.tables import label_runs

p = snakemake.params
with Job(snakemake) as job:
    df = label_runs(gather_csv(list(snakemake.input), p.runs), p.labels)
    fig = mnist_robust_accuracy(df, style=p.plots["style"])
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
