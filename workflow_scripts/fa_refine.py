"""Rule fa_refine: the critical radius of one 2-class FA net under one attack set (the grid's
worst case, or one attack alone) refined by bisection inside the radius grid's cell of the
50 % crossing (ibrobust.stages.radii, points_bisected "crossing"). The grid is the attack
job's (same random stream): for the worst case its accuracies must equal the attack job's
table (checked and recorded)."""

import numpy as np
import pandas as pd
from _job import Job

from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_json
from ibrobust.seeding import torch_generator
from ibrobust.stages.radii import refine_radii

p, out, w = snakemake.params, snakemake.output, snakemake.wildcards
with Job(snakemake) as job:
    job.dataset(snakemake.input.data, "evaluation")
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)
    gen = torch_generator(p.seed, "attack", w.grid)  # the attack job's stream (its grid)
    points, summary = refine_radii(
        load_torch(snakemake.input.model), data, dict(p.attacks), list(p.radii), p.points,
        p.task, gen, p.tolerance, where=snakemake.input.data, points_bisected="crossing",
    )  # fmt: skip
    table = pd.read_csv(snakemake.input.attack)
    name = "worst" if len(p.attacks) > 1 else next(iter(p.attacks))
    theirs = table[table.attack == name].sort_values("eps")
    ours = np.array([summary["grid_worst_acc"][str(e)] for e in theirs.eps])
    summary["radius"] = w.radius
    summary["grid_matches_attack_job"] = bool(np.allclose(ours, theirs.robust_acc, atol=1e-12))
    if not summary["grid_matches_attack_job"]:
        job.log.warning("the grid's %s accuracies differ from the attack job's table", name)
    job.log.info(
        "%s critical radius %.4f in [%.4f, %.4f] (grid cell [%.3f, %.3f]); tolerance %g, "
        "%d of %d points bisected", w.radius, summary["critical_radius"],
        summary["critical_radius_lo"], summary["critical_radius_hi"],
        summary["grid_critical_radius_lo"], summary["grid_critical_radius_hi"], p.tolerance,
        summary["bisected"], summary["n_points"],
    )  # fmt: skip
    job.metrics({f"refined.critical_radius.{w.radius}": summary["critical_radius"]})
    save_csv(out.points, points)
    save_json(out.summary, summary)
    for f in (out.points, out.summary):
        job.artifact(f, "attack")
