"""Rule train: train one two-layer net (GD) or build the hand-built robust reference."""

import pandas as pd
import torch
from _job import Job

from ibrobust.data.clusters import config_from_dict, from_arrays
from ibrobust.io import load_npz, save_csv, save_torch
from ibrobust.models.robust_reference import robust_reference_net
from ibrobust.models.two_layer import (
    TwoLayerConfig,
    TwoLayerFixed,
    init_two_layer,
    readout_for,
    to_state,
)
from ibrobust.training.full_batch import GDConfig, train_gd
from ibrobust.training.losses import supervised_accuracy

p = snakemake.params
with Job(snakemake) as job:
    data = from_arrays(config_from_dict(p.dataset), load_npz(snakemake.input.data))
    tr, te = data.train, data.test
    model_cfg = {k: v for k, v in p.model.items() if k != "kind"}
    if p.model["kind"] == "robust_reference":
        net = robust_reference_net(data.means, data.sign, beta=model_cfg["beta"])
        state = to_state(net, kind="robust_reference", supervision="binary")
        history = pd.DataFrame(
            [
                {
                    "step": 0,
                    "loss": float("nan"),
                    "acc": float((net.binary_score(tr.x) * tr.y > 0).float().mean()),
                }
            ]
        )
    else:
        heads = 2 if p.supervision == "binary" else data.config.k
        cfg = TwoLayerConfig(**model_cfg)
        w0, b0 = init_two_layer(data.config.d, heads, cfg, p.seed)
        readout = readout_for(p.supervision, data.sign)
        gd = GDConfig(**{k: v for k, v in p.optimizer.items() if k != "kind"})

        def on_log(rec):
            job.metrics({"train.loss": rec["loss"], "train.acc": rec["acc"]}, step=rec["step"])
            job.log.info("step %6d  loss %.3e  acc %.4f", rec["step"], rec["loss"], rec["acc"])

        res = train_gd(tr.x, tr.y, tr.fine, w0, b0, readout, p.supervision, gd, on_log=on_log)
        net = TwoLayerFixed(res.weight, res.bias, readout)
        steps = sorted(res.checkpoints)
        state = to_state(
            net,
            kind="two_layer",
            supervision=p.supervision,
            init_weight=w0,
            init_bias=b0,
            ckpt_steps=torch.tensor(steps),
            ckpt_weight=torch.stack([res.checkpoints[s][0] for s in steps]),
            ckpt_bias=torch.stack([res.checkpoints[s][1] for s in steps]),
            steps=torch.tensor(res.steps),
            converged=torch.tensor(res.converged),
        )
        history = pd.DataFrame(res.history)
        if not res.converged:
            job.log.warning(
                "did not reach stop_loss=%g within max_steps=%d (final loss %.3e)",
                gd.stop_loss,
                gd.max_steps,
                res.history[-1]["loss"],
            )
        job.metrics({"train.steps": res.steps, "train.converged": float(res.converged)})
    with torch.no_grad():
        clean = float((net.binary_score(te.x) * te.y > 0).float().mean())
        fit = supervised_accuracy(state["supervision"], net(tr.x), net.readout, tr.y, tr.fine)
    job.metrics({"test.binary_acc": clean, "train.final_acc": fit})
    job.log.info("clean binary test accuracy %.4f, train accuracy %.4f", clean, fit)
    save_torch(snakemake.output.model, state)
    save_csv(snakemake.output.history, history)
    job.artifact(snakemake.output.history, "train")
