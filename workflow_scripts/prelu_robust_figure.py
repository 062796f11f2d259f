"""Rule prelu_robust_figure: robust accuracy vs l2 radius per p and alpha, with 1/sqrt(K), sqrt(2)/2."""

from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.studies.prelu.plots import robust_accuracy_by_alpha
from ibrobust.studies.prelu.tables import label_runs

p = snakemake.params
with Job(snakemake) as job:
    df = label_runs(gather_csv(list(snakemake.input), p.runs), p.labels)
    fig = robust_accuracy_by_alpha(
        df, p.labels["k"], spread=p.plots["spread"], style=p.plots["style"]
    )
    save_outputs(job, fig, df, snakemake.output, p.plots["dpi"])
