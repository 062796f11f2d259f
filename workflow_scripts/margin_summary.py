"""Rule margin_summary: Study MARGIN's checkpoint table beside the paper's (summary.csv/.md,
one row per run, schedule and checkpoint with its robust accuracies and KKT residual) and, per
run, the numbers the study reports: monotonicity of the smoothed normalized margin after the
data is fit, the lowest loss reached, whether every logged value is finite, the certificate
check, and for the constant-step runs (training.flow) the loss and norm rates; the attack audit
(which attack found each minimal distance), every run's per-point distances, and per seed the
two schedules' losses at the same epoch (schedules.csv: header only without training.flow)."""

import json

import pandas as pd
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.margin import tables as mr

p = snakemake.params
i = snakemake.input
with Job(snakemake) as job:
    tables, notes, audits, all_points, hists = {}, {}, [], [], {"loss_based": {}, "constant": {}}
    for k, r in enumerate(p.runs):
        run = f"{r['dataset']}/{r['model']}/seed{r['seed']}"
        pts = pd.read_csv(i.points[k])
        audits.append(mr.attack_audit(pts).assign(run=run))
        all_points.append(pts.assign(run=run))
        arms = [("loss_based", "", pts)] + ([("constant", "flow_", None)] if p.flow else [])
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
    summary = mr.summary_table(tables)
    save_csv(snakemake.output.csv, summary)
    save_csv(snakemake.output.checkpoints, summary[["run", "schedule", "name", "paper_name",
             "epoch", "log10_train_loss", "normalized_margin", "smoothed_normalized_margin",
             "kkt_residual"]])  # fmt: skip
    audit = pd.concat(audits, ignore_index=True)
    save_csv(snakemake.output.audit, audit)
    save_csv(snakemake.output.points, pd.concat(all_points, ignore_index=True))
    save_csv(snakemake.output.schedules, mr.schedules_table(hists["loss_based"], hists["constant"]))
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(mr.summary_markdown(summary, notes, audit))
    for f in (snakemake.output.md, snakemake.output.audit, snakemake.output.schedules):
        job.artifact(f, "figures")
