"""Rule decompose: lambda decomposition of a two-layer net's neurons over its checkpoints."""

import pandas as pd
import torch
from _job import Job

from ibrobust.analysis.decomposition import feature_averaging_index, lambda_decomposition
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_json

with Job(snakemake) as job:
    data = dataset_from_arrays(load_npz(snakemake.input.data), snakemake.input.data)
    if data.means is None or "train_noise" not in data.extras:
        raise ValueError(f"{snakemake.input.data}: the decomposition needs cluster data")
    state = load_torch(snakemake.input.model)
    h, m, d = state["weight"].shape
    readout = state["readout"]
    heads = torch.arange(h).repeat_interleave(m)  # (N,) head of each neuron
    same_class = readout[heads][:, None] == data.sign[None, :]  # (N, k)
    w0 = state["init_weight"].reshape(h * m, d)
    noise = data.extras["train_noise"].float()
    rows, trajectory = [], []
    for c, step in enumerate(state["ckpt_steps"].tolist()):
        if step == 0:
            continue
        wt = state["ckpt_weight"][c].reshape(h * m, d)
        dec = lambda_decomposition(wt - w0, data.means.float(), noise, data.train.fine)
        fa = feature_averaging_index(dec.lam, same_class)
        rows += [
            {
                "step": step,
                "neuron": r,
                "head": int(heads[r]),
                "head_sign": float(readout[heads[r]]),
                "feature": j,
                "feature_sign": float(data.sign[j]),
                "lambda": float(dec.lam[r, j]),
                "residual": float(dec.residual[r]),
                "basis": dec.basis,
            }
            for r in range(h * m)
            for j in range(data.k)
        ]
        trajectory.append(
            {
                "step": step,
                "fa_index_mean": float(fa.nanmean()),
                "residual_max": float(dec.residual.max()),
            }
        )
        job.metrics(
            {
                "analysis.fa_index": trajectory[-1]["fa_index_mean"],
                "analysis.residual_max": trajectory[-1]["residual_max"],
            },
            step=step,
        )
    if not trajectory:
        raise ValueError(f"{snakemake.input.model}: no checkpoint after step 0 to decompose")
    summary = {
        "supervision": snakemake.params.supervision,
        "basis": rows[-1]["basis"],
        "fa_index_final": trajectory[-1]["fa_index_mean"],
        "residual_max": max(t["residual_max"] for t in trajectory),
        "trajectory": trajectory,
    }
    job.log.info(
        "final FA index %.3f, residual max %.2e (%s basis)",
        summary["fa_index_final"],
        summary["residual_max"],
        summary["basis"],
    )
    save_csv(snakemake.output.lambdas, pd.DataFrame(rows))
    save_json(snakemake.output.summary, summary)
    job.artifact(snakemake.output.summary, "analysis")
