"""Rule margin_summary: Study MARGIN's checkpoint table beside the paper's (summary.csv/.md,
one row per run and checkpoint with its robust accuracies) and, per run, the numbers the
study reports: monotonicity of the smoothed normalized margin after the data is fit, the
lowest loss reached, whether every logged value is finite, the certificate check; the attack
audit (which attack found each minimal distance) and every run's per-point distances."""

import json

import pandas as pd
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.margin import tables as mr

p = snakemake.params
i = snakemake.input
with Job(snakemake) as job:
    tables, notes, audits, all_points = {}, {}, [], []
    for k, r in enumerate(p.runs):
        run = f"{r['dataset']}/{r['model']}/seed{r['seed']}"
        hist, pts = pd.read_csv(i.history[k]), pd.read_csv(i.points[k])
        meta = json.loads(open(i.meta[k]).read())
        sep, cc = mr.separation(hist), mr.certificate_check(pts)
        audits.append(mr.attack_audit(pts).assign(run=run))
        all_points.append(pts.assign(run=run))
        reached = dict(min_log10_loss=float(hist["log10_train_loss"].min()),
                       all_finite=mr.all_finite(hist), **meta)  # fmt: skip
        rob = mr.robust_at(pts, p.radii)
        wide = rob.pivot(index="checkpoint", columns="split")
        wide.columns = [f"{split}_{col}" for col, split in wide.columns]
        t = mr.checkpoint_table(hist, pd.read_csv(i.table[k]))
        t = t.merge(wide, left_on="name", right_index=True, how="left")
        tables[run] = t.assign(**{f"sep_{a}": b for a, b in sep.items()},
                               **{f"cert_{a}": b for a, b in cc.items()},
                               min_log10_loss=reached["min_log10_loss"],
                               all_finite=float(reached["all_finite"]))  # fmt: skip
        notes[run] = {"training": reached, "after the data is fit": sep, "certificate": cc}
        job.log.info("%s: log10 L %.2f (finite %s); smoothed margin decreasing in %s of %s "
                     "epochs after fit; distance >= certificate on %s of %s points", run,
                     reached["min_log10_loss"], reached["all_finite"], sep["decreasing"],
                     sep["epochs_after"], cc["holding"], cc["points"])  # fmt: skip
        job.metrics({"min_log10_loss": reached["min_log10_loss"],
                     "frac_decreasing": sep["frac_decreasing"]}, step=k)  # fmt: skip
    summary = mr.summary_table(tables)
    save_csv(snakemake.output.csv, summary)
    save_csv(snakemake.output.checkpoints, summary[["run", "name", "paper_name", "epoch",
             "log10_train_loss", "normalized_margin", "smoothed_normalized_margin"]])  # fmt: skip
    audit = pd.concat(audits, ignore_index=True)
    save_csv(snakemake.output.audit, audit)
    save_csv(snakemake.output.points, pd.concat(all_points, ignore_index=True))
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(mr.summary_markdown(summary, notes, audit))
    for f in (snakemake.output.md, snakemake.output.audit):
        job.artifact(f, "figures")
