"""Rule margin_figure: one figure of Study MARGIN and its CSV. margins / loss: the per-epoch
history with the checkpoints marked, and the constant-step run of the same seed where the study
has one (the first run; the CSV holds every run of both schedules); robust_accuracy:
robust accuracy vs eps per checkpoint, train and test, l2 and l_inf; distance_vs_margin: per
point, the minimal distance against the point's normalized margin, with the certificate."""

import pandas as pd
from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.studies.margin import plots
from ibrobust.studies.margin.tables import robust_curves

p = snakemake.params
figure = snakemake.wildcards.figure
with Job(snakemake) as job:
    runs = p.runs
    label = [f"{r['dataset']}/{r['model']}/seed{r['seed']}" for r in runs]
    if figure in ("margins", "loss"):
        hist = gather_csv(list(snakemake.input.history), runs).assign(schedule="loss_based")
        cks = pd.read_csv(snakemake.input.table[0])
        first = hist[(hist["dataset"] == runs[0]["dataset"]) & (hist["model"] == runs[0]["model"])
                     & (hist["seed"] == runs[0]["seed"])]  # fmt: skip
        constant, table = None, hist
        if snakemake.input.flow_history:  # training.flow: the constant-step runs, in runs order
            flow = gather_csv(list(snakemake.input.flow_history), runs).assign(schedule="constant")
            constant = pd.read_csv(snakemake.input.flow_history[0])
            table = pd.concat([hist, flow], ignore_index=True)
        plot = plots.plot_margins if figure == "margins" else plots.plot_loss
        fig = plot(first, cks, constant)
    else:
        points = gather_csv(list(snakemake.input.points), runs)
        if len(runs) > 1:  # one curve per (run, checkpoint)
            run_of = dict(zip([tuple(r.values()) for r in runs], label, strict=True))
            keys = list(zip(points["dataset"], points["model"], points["seed"], strict=True))
            points["checkpoint"] = [
                f"{run_of[k]}:{c}" for k, c in zip(keys, points["checkpoint"], strict=True)
            ]
        if figure == "robust_accuracy":
            table = robust_curves(points, p.radii)
            fig = plots.plot_robust_accuracy(table)
        else:
            table = points
            fig = plots.plot_distance_vs_margin(points)
    job.log.info("%s: %d rows from %d runs", figure, len(table), len(runs))
    save_outputs(job, fig, table, snakemake.output, p.plots["dpi"])
