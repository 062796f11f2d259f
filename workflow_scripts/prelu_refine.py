"""Rule prelu_refine: per-point critical radii of one synthetic pReLU net by bisection inside
the radius grid's cells, under the worst case over the study's attacks, and the run's refined
critical radius (ibrobust.stages.radii). The grid is the attack job's (same random stream):
its worst-case accuracies must equal the attack job's table."""

import numpy as np
import pandas as pd
from _job import Job

from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_json
from ibrobust.seeding import torch_generator
from ibrobust.stages.radii import refine_radii

p, out = snakemake.params, snakemake.output
with Job(snakemake) as job:
    job.dataset(snakemake.input.data, "evaluation")
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)
    gen = torch_generator(p.seed, "attack", "main")  # the attack job's stream (grid main)
    points, summary = refine_radii(
        load_torch(snakemake.input.model), data, dict(p.attacks), list(p.radii), p.points,
        p.task, gen, p.tolerance, where=snakemake.input.data,
    )  # fmt: skip
    table = pd.read_csv(snakemake.input.attack)
    worst = table[table.attack == "worst"].sort_values("eps")
    ours = np.array([summary["grid_worst_acc"][str(e)] for e in worst.eps])
    summary["grid_matches_attack_job"] = bool(np.allclose(ours, worst.robust_acc, atol=1e-12))
    if not summary["grid_matches_attack_job"]:
        job.log.warning("the grid's worst case differs from the attack job's table")
    job.log.info(
        "critical radius %.4f in [%.4f, %.4f] (grid cell [%.3f, %.3f]); tolerance %g, "
        "%d points, %d censored", summary["critical_radius"], summary["critical_radius_lo"],
        summary["critical_radius_hi"], summary["grid_critical_radius_lo"],
        summary["grid_critical_radius_hi"], p.tolerance, summary["n_points"],
        summary["censored_points"],
    )  # fmt: skip
    job.metrics({"refined.critical_radius": summary["critical_radius"]})
    save_csv(out.points, points)
    save_json(out.summary, summary)
    for f in (out.points, out.summary):
        job.artifact(f, "attack")
