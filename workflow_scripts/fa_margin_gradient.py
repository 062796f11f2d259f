"""Rule fa_margin_gradient: margin vs input gradient per test point, every trained and
reference net of a feature-averaging study and each binary readout (issue 11 section 2).
MLflow: the worst case's robust accuracy per net and readout at step round(eps * 1000),
with robust_acc.eps (eps itself) at the same steps."""

import pandas as pd
from _figures import save_outputs
from _job import Job, eps_steps

from ibrobust.analysis import margin_gradient as mg
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.device import resolve_device
from ibrobust.io import load_npz, load_torch, save_csv
from ibrobust.models.registry import load_model
from ibrobust.progress import Progress
from ibrobust.studies.feature_averaging.margin_gradient_figure import margin_gradient_figure

p = snakemake.params
with Job(snakemake) as job:
    device = resolve_device(p.device)  # before any work: device: cuda without CUDA fails here
    cfg = mg.MarginGradientConfig(**p.settings)
    radii = cfg.radii(p.radius_max)
    steps = eps_steps(radii)
    units = [mg.run_units(r["supervision"], p.readouts, p.attacks[r["supervision"]], radii)
             for r in p.runs]  # fmt: skip
    progress = Progress(job.progress_report, total=sum(units))
    for eps, step in steps.items():  # the x-axis of the robust_acc.* metrics below
        job.metrics({"robust_acc.eps": eps}, step=step)
    frames, rows = [], []
    for run, model_file, data_file in zip(
        p.runs, snakemake.input.models, snakemake.input.data, strict=True
    ):
        job.dataset(data_file, "evaluation")
        data = dataset_from_arrays(load_npz(data_file), data_file)
        state = load_torch(model_file)
        net = load_model(state)
        label = p.model_labels[run["model"]] or run["supervision"]
        specs = p.attacks[run["supervision"]]
        pts = mg.run_points(net, data, run["supervision"], p.readouts, specs, radii, cfg.points,
                            run["seed"], progress, f"{label} seed{run['seed']}",
                            device=device)  # fmt: skip
        pts.insert(0, "label", label)
        for k in ("dataset", "model", "optimizer", "supervision", "seed"):
            pts.insert(1, k, run[k])
        frames.append(pts)
        for ro, g in pts.groupby("readout", sort=False):
            rows.append({**run, "label": label, "readout": ro, **mg.summarize(g)})
            key = f"robust_acc.{label}.seed{run['seed']}.{ro}"  # worst case over the attacks
            for eps, acc in mg.robust_accuracy(g["breaking_radius"], radii).items():
                job.metrics({key: acc}, step=steps[eps])
        job.log.info("%s seed %s done", label, run["seed"])
    points = pd.concat(frames, ignore_index=True)
    summary = pd.DataFrame(rows)
    ds = p.dataset
    fig = margin_gradient_figure(points, d=int(ds["d"]), k=int(ds["k"]), style=p.plots["style"])
    save_outputs(job, fig, points, snakemake.output, p.plots["dpi"])
    save_csv(snakemake.output.summary, summary)
    job.artifact(snakemake.output.summary, "tables")
    job.log.info("summary:\n%s", summary.round(3).to_string(index=False))
