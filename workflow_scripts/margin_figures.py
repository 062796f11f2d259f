"""Rule margin_figures: Study MARGIN's figures and tables, one job. Figures (PNG, PDF and the
CSV drawn): margins / loss, the per-epoch history of the first run with its checkpoints
marked, and the same seed's constant-step run where the study has one (the CSV holds every
run of both schedules); robust_accuracy, robust accuracy vs eps per checkpoint, train and
test, l2 and l_inf; distance_vs_margin, per point the minimal distance against the point's
normalized margin, with the certificate. Tables: the checkpoint table beside the paper's
(summary.csv/.md, one row per run, schedule and checkpoint with its robust accuracies and KKT
residual) and, per run, the numbers the study reports (monotonicity of the smoothed
normalized margin after the data is fit, the lowest loss reached, whether every logged value
is finite, the certificate check, and for the constant-step runs the loss and norm rates);
the attack audit (which attack found each minimal distance), every run's per-point
distances, and per seed the two schedules' losses at the same epoch (schedules.csv: header
only without training.flow)."""

import json
from types import SimpleNamespace

import pandas as pd
from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.margin import plots
from ibrobust.studies.margin import tables as mr

p, i, out = snakemake.params, snakemake.input, snakemake.output
LOSS_BASED, CONSTANT = mr.SCHEDULES


def files(prefix: str) -> SimpleNamespace:
    return SimpleNamespace(**{ext: out[f"{prefix}_{ext}"] for ext in ("png", "pdf", "csv")})


def run_label(r: dict) -> str:
    return f"{r['dataset']}/{r['model']}/seed{r['seed']}"


def history_figures(job: Job) -> None:
    """margins and loss: the first run of each schedule drawn, every run in the CSV."""
    runs = p.runs
    hist = gather_csv(list(i.history), runs).assign(schedule=LOSS_BASED)
    first = hist[(hist["dataset"] == runs[0]["dataset"]) & (hist["model"] == runs[0]["model"])
                 & (hist["seed"] == runs[0]["seed"])]  # fmt: skip
    cks = pd.read_csv(i.table[0])
    constant, table = None, hist
    if p.flow:  # training.flow: the constant-step runs, in runs order
        flow = gather_csv(list(i.flow_history), runs).assign(schedule=CONSTANT)
        constant = pd.read_csv(i.flow_history[0])
        table = pd.concat([hist, flow], ignore_index=True)
    for name, plot in (("margins", plots.plot_margins), ("loss", plots.plot_loss)):
        save_outputs(job, plot(first, cks, constant), table, files(name), p.plots["dpi"])
    job.log.info("margins, loss: %d history rows of %d runs", len(table), len(runs))


def point_figures(job: Job) -> None:
    """robust_accuracy and distance_vs_margin from every run's per-point distances (one curve
    per (run, checkpoint) when the study has several runs)."""
    points = gather_csv(list(i.points), p.runs)
    if len(p.runs) > 1:
        label = [run_label(r) for r in p.runs]
        run_of = dict(zip([tuple(r.values()) for r in p.runs], label, strict=True))
        keys = list(zip(points["dataset"], points["model"], points["seed"], strict=True))
        points["checkpoint"] = [
            f"{run_of[k]}:{c}" for k, c in zip(keys, points["checkpoint"], strict=True)
        ]
    curves = mr.robust_curves(points, p.radii)
    fig = plots.plot_robust_accuracy(curves)
    save_outputs(job, fig, curves, files("robust"), p.plots["dpi"])
    fig = plots.plot_distance_vs_margin(points)
    save_outputs(job, fig, points, files("distance"), p.plots["dpi"])
    job.log.info("robust_accuracy, distance_vs_margin: %d points", len(points))


def summary(job: Job) -> None:
    """summary.csv/.md, checkpoints.csv, attack_audit.csv, points.csv, schedules.csv."""
    tables, notes, audits, all_points = {}, {}, [], []
    hists = {LOSS_BASED: {}, CONSTANT: {}}
    for k, r in enumerate(p.runs):
        run = run_label(r)
        pts = pd.read_csv(i.points[k])
        audits.append(mr.attack_audit(pts).assign(run=run))
        all_points.append(pts.assign(run=run))
        arms = [(LOSS_BASED, "", pts)] + ([(CONSTANT, "flow_", None)] if p.flow else [])
        for schedule, pre, points in arms:
            hist = pd.read_csv(getattr(i, f"{pre}history")[k])
            meta = json.loads(open(getattr(i, f"{pre}meta")[k]).read())
            t, note = mr.run_table(hist, pd.read_csv(getattr(i, f"{pre}table")[k]), points,
                                   pd.read_csv(getattr(i, f"{pre}kkt")[k]), p.radii, schedule)  # fmt: skip
            note["training"] = {**note["training"], **meta}
            tables[(run, schedule)], notes[f"{run} ({schedule})"] = t, note
            hists[schedule][run] = hist
            sep = note["after the data is fit"]
            job.log.info("%s %s: log10 L %.2f (finite %s); smoothed margin decreasing in %s of "
                         "%s rows after fit; KKT residual at the end %.3g", run, schedule,
                         note["training"]["min_log10_loss"], note["training"]["all_finite"],
                         sep["decreasing"], sep["epochs_after"],
                         float(t["kkt_residual"].iloc[-1]))  # fmt: skip
            job.metrics({f"{schedule}.min_log10_loss": note["training"]["min_log10_loss"],
                         f"{schedule}.frac_decreasing": sep["frac_decreasing"]}, step=k)  # fmt: skip
    table = mr.summary_table(tables)
    save_csv(out.summary_csv, table)
    save_csv(out.checkpoints, table[["run", "schedule", "name", "paper_name", "epoch",
             "log10_train_loss", "normalized_margin", "smoothed_normalized_margin",
             "kkt_residual"]])  # fmt: skip
    audit = pd.concat(audits, ignore_index=True)
    save_csv(out.audit, audit)
    save_csv(out.points, pd.concat(all_points, ignore_index=True))
    save_csv(out.schedules, mr.schedules_table(hists[LOSS_BASED], hists[CONSTANT]))
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(mr.summary_markdown(table, notes, audit))
    for f in (out.summary_md, out.audit, out.schedules):
        job.artifact(f, "figures")


with Job(snakemake) as job:
    summary(job)
    history_figures(job)
    point_figures(job)
