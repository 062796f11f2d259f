"""Rule margin_figures: Study MARGIN's figures and tables, one job. Figures (PNG, PDF, CSV):
margins / loss (the first run's history with its checkpoints, and its constant-step run where
the study has one; the CSV: every run of both schedules), robust_accuracy (vs eps per
checkpoint, train / test, l2 / l_inf), distance_vs_margin (with the certificate). Tables:
ibrobust.studies.margin.report (summary, checkpoints, attack audit, points, schedules)."""

import pandas as pd
from _figures import figure_files, gather_csv, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.margin import plots
from ibrobust.studies.margin import report as rep
from ibrobust.studies.margin.tables import robust_curves

p, i, out = snakemake.params, snakemake.input, snakemake.output
dpi = p.plots["dpi"]


def history_figures(job: Job) -> None:
    """margins and loss: the first run of each schedule drawn, every run in the CSV."""
    hist = gather_csv(list(i.history), p.runs).assign(schedule=rep.LOSS_BASED)
    cks, constant, table = pd.read_csv(i.table[0]), None, hist
    if p.flow:  # training.flow: the constant-step runs, in runs order
        flow = gather_csv(list(i.flow_history), p.runs).assign(schedule=rep.CONSTANT)
        constant = pd.read_csv(i.flow_history[0])
        table = pd.concat([hist, flow], ignore_index=True)
    for name, plot in (("margins", plots.plot_margins), ("loss", plots.plot_loss)):
        fig = plot(rep.first_run(hist, p.runs[0]), cks, constant)
        save_outputs(job, fig, table, figure_files(out, name), dpi)
    job.log.info("margins, loss: %d history rows of %d runs", len(table), len(p.runs))


def point_figures(job: Job) -> None:
    """robust_accuracy and distance_vs_margin from every run's per-point distances."""
    points = rep.label_checkpoints(gather_csv(list(i.points), p.runs), p.runs)
    curves = robust_curves(points, p.radii)
    save_outputs(job, plots.plot_robust_accuracy(curves), curves, figure_files(out, "robust"), dpi)
    fig = plots.plot_distance_vs_margin(points)
    save_outputs(job, fig, points, figure_files(out, "distance"), dpi)
    job.log.info("robust_accuracy, distance_vs_margin: %d points", len(points))


def summary(job: Job) -> None:
    tables, logged = rep.collect(p.runs, i, p.radii, p.flow)
    for k, line, metrics in logged:
        job.log.info("%s", line)
        job.metrics(metrics, step=k)
    for key in ("summary_csv", "checkpoints", "audit", "points", "schedules"):
        save_csv(out[key], tables[key])
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(tables["summary_md"])
    for f in (out.summary_md, out.audit, out.schedules):
        job.artifact(f, "figures")


with Job(snakemake) as job:
    summary(job)
    history_figures(job)
    point_figures(job)
