"""Rule train: train one model (any registry kind, any optimizer) or build the robust reference."""

from _job import Job

from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.device import resolve_device
from ibrobust.io import load_npz, save_csv, save_json, save_torch
from ibrobust.stages.networks import fit
from ibrobust.training.protocol import CURVE_KEYS

p = snakemake.params
with Job(snakemake) as job:
    device = resolve_device(p.device)  # before any work: device: cuda without CUDA fails here
    job.log.info("device %s", device)
    job.dataset(snakemake.input.data, "training")
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)

    budget = p.optimizer.get("max_steps", p.optimizer.get("epochs", 0))  # a gd step = an epoch

    last = {}

    def on_log(rec):
        last.update(rec)
        job.progress(rec["epoch"], budget, **{"train.loss": rec["loss"], "train.acc": rec["acc"]})
        if "robust_test_acc" in rec:  # a curve point (optimizer eval_every): step = epoch
            job.metrics({f"curve.{k}": rec[k] for k in CURVE_KEYS}, step=rec["epoch"])

    res = fit(p.model, p.optimizer, data, p.supervision, p.seed, on_log=on_log, device=device)
    if last:  # the last step always gets a line, also when stop_loss ended training early
        job.progress(last["epoch"], budget, every=0.0, log_metrics=False,
                     **{"train.loss": last["loss"], "train.acc": last["acc"]})  # fmt: skip
    if not res.metrics.get("train.converged", 1.0) and p.optimizer.get("stop_loss") is not None:
        job.log.warning(
            "did not reach stop_loss=%g within the step budget (final loss %.3e)",
            p.optimizer["stop_loss"],
            res.history["loss"].iloc[-1],
        )
    job.metrics(res.metrics)
    job.log.info("final metrics %s", {k: round(v, 4) for k, v in res.metrics.items()})
    save_torch(snakemake.output.model, res.state)
    job.model(snakemake.output.model)  # tag ibrobust.model_path; the file under model/ (cap)
    save_csv(snakemake.output.history, res.history)
    save_json(snakemake.output.metrics, res.metrics)
    for f in (snakemake.output.history, snakemake.output.metrics):
        job.artifact(f, "train")
