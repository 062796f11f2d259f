"""Rules attack and attack_readouts_<study>: robust accuracy of one model over a radius grid,
every attack + worst case, under each of ``params.readouts`` (one table and summary each).
Robust accuracy goes to MLflow at step round(eps * 1000), with the metric robust_acc.eps at
the same steps: the UI draws it against eps (x-axis: that metric)."""

from _job import Job, eps_steps

from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.device import resolve_device
from ibrobust.io import load_npz, load_torch, save_csv, save_json
from ibrobust.seeding import torch_generator
from ibrobust.stages.robustness import evaluate_robustness

p, out = snakemake.params, snakemake.output
readouts = list(p.readouts)
with Job(snakemake) as job:
    device = resolve_device(p.device)  # before any work: device: cuda without CUDA fails here
    steps = eps_steps(p.radii)  # before any attack: radii closer than 1/1000 are an error
    job.dataset(snakemake.input.data, "evaluation")
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)
    gen = torch_generator(p.seed, "attack", snakemake.wildcards.grid)
    job.log.info("attacking %s points at %d radii with %s under %s on %s", p.points,
                 len(p.radii), list(p.attacks), readouts, device)  # fmt: skip
    results = evaluate_robustness(
        load_torch(snakemake.input.model), data, dict(p.attacks), list(p.radii), p.points,
        p.task, readouts, gen, on_attack=lambda a: job.log.info("attack %s done", a),
        where=snakemake.input.data, device=device, on_progress=job.progress_report,
    )  # fmt: skip
    for eps, step in steps.items():
        job.metrics({"robust_acc.eps": eps}, step=step)
    # the outputs list the readouts in the order of params.readouts (rules/attack.smk)
    for readout, table_path, summary_path in zip(readouts, out.tables, out.summaries, strict=True):
        table, summary = results[readout]
        key = "" if len(readouts) == 1 else f"{readout}."  # one readout: the keys of old
        for name, accs in summary["robust_acc"].items():
            for eps, acc in accs.items():
                job.metrics({f"robust_acc.{key}{name}": acc}, step=steps[float(eps)])
            job.metrics({f"critical_radius.{key}{name}": summary["critical_radius"][name]})
        job.log.info(
            "critical radii (%s) %s", readout,
            {a: round(v, 3) for a, v in summary["critical_radius"].items()},
        )  # fmt: skip
        save_csv(table_path, table)
        save_json(summary_path, summary)
        folder = "attack" if len(readouts) == 1 else f"attack/{readout}"
        for f in (table_path, summary_path):
            job.artifact(f, folder)
