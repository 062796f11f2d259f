"""Rule margin_robustness: per checkpoint of one run (Study MARGIN), per-point minimal
adversarial distances on train and test points (FAB l2 / l_inf, the l2 PGD-bisection
cross-check, the certificate q / beta) and the margins they are plotted against."""

import time

from _job import Job

from ibrobust.device import resolve_device
from ibrobust.io import load_npz, load_torch, save_csv
from ibrobust.progress import Progress
from ibrobust.studies.margin.experiment import (
    MarginRobustConfig,
    checkpoint_robustness,
    load_checkpoints,
    run_data,
)

p = snakemake.params
with Job(snakemake) as job:
    device = resolve_device(p.device)  # before any work: device: cuda without CUDA fails here
    rob = dict(p.robustness)
    sup = rob.pop("supervision")
    cfg = MarginRobustConfig(**rob)
    job.dataset(snakemake.input.data, "evaluation")
    data = run_data(load_npz(snakemake.input.data), sup)
    nets = load_checkpoints(load_torch(snakemake.input.checkpoints), p.model, data, sup, p.seed)
    job.log.info("checkpoints %s; %d points per split, %d in the bisection cross-check; on %s",
                 list(nets), cfg.attack_points, cfg.bisection_points, device)  # fmt: skip
    c0 = time.process_time()
    points = checkpoint_robustness(nets, data, cfg, p.seed, Progress(job.progress_report),
                                   device=device)  # fmt: skip
    save_csv(snakemake.output.points, points)
    g = points.groupby(["checkpoint", "split"], sort=False)
    for i, ((name, split), d) in enumerate(g):
        med = {f"{split}.median_{n}": float(d[f"distance_{n}"].median()) for n in ("l2", "linf")}
        job.metrics({k: v for k, v in med.items() if v == v}, step=i)
        job.log.info("%s %s: clean %.3f, median distance l2 %.4g linf %.4g", name, split,
                     float((d["margin"] > 0).mean()), med[f"{split}.median_l2"],
                     med[f"{split}.median_linf"])  # fmt: skip
    job.metrics({"robustness.cpu_seconds": time.process_time() - c0})
    job.artifact(snakemake.output.points, "margin")
