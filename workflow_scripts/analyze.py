"""Rule analyze: lambda decomposition over the checkpoints, cosines, averaging index."""

import pandas as pd
import torch
from _job import Job

from ibrobust.analysis.decomposition import (
    cosine_matrix,
    feature_averaging_index,
    lambda_decomposition,
)
from ibrobust.data.clusters import ClusterDataConfig, from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_json

with Job(snakemake) as job:
    arrays = load_npz(snakemake.input.data)
    k, d = arrays["means"].shape
    data = from_arrays(ClusterDataConfig(d=d, k=k), arrays)  # shapes only; values from the file
    state = load_torch(snakemake.input.model)
    h, m, _ = state["weight"].shape
    readout = state["readout"]
    heads = torch.arange(h).repeat_interleave(m)  # (N,) head of each neuron
    same_class = readout[heads][:, None] == data.sign[None, :]  # (N, k)
    w0 = state["init_weight"].reshape(h * m, d)
    rows, fa_rows = [], []
    for c, step in enumerate(state["ckpt_steps"].tolist()):
        wt = state["ckpt_weight"][c].reshape(h * m, d)
        if step == 0:
            continue
        dec = lambda_decomposition(wt - w0, data.means, data.train.noise, data.train.fine)
        fa = feature_averaging_index(dec.lam, same_class)
        for r in range(h * m):
            for j in range(k):
                rows.append(
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
                )
        fa_rows.append(
            {
                "step": step,
                "fa_index_mean": float(fa.nanmean()),
                "residual_max": float(dec.residual.max()),
            }
        )
        job.metrics(
            {
                "analysis.fa_index": float(fa.nanmean()),
                "analysis.residual_max": float(dec.residual.max()),
            },
            step=step,
        )
    cos = cosine_matrix(state["weight"].reshape(h * m, d), data.means)
    cos_rows = [
        {
            "neuron": r,
            "head": int(heads[r]),
            "head_sign": float(readout[heads[r]]),
            "feature": j,
            "feature_sign": float(data.sign[j]),
            "cosine": float(cos[r, j]),
        }
        for r in range(h * m)
        for j in range(k)
    ]
    same = cos[same_class].mean()
    final = fa_rows[-1]
    summary = {
        "supervision": snakemake.params.supervision,
        "basis": rows[-1]["basis"],
        "fa_index_final": final["fa_index_mean"],
        "residual_max": max(r["residual_max"] for r in fa_rows),
        "cosine_same_class_mean": float(same),
        "cosine_max_per_neuron_mean": float(cos.max(1).values.mean()),
        "trajectory": fa_rows,
    }
    job.log.info(
        "final FA index %.3f, residual max %.2e (%s basis), mean same-class cosine %.3f",
        summary["fa_index_final"],
        summary["residual_max"],
        summary["basis"],
        same,
    )
    job.metrics({"analysis.cosine_same_class_mean": float(same)})
    save_csv(snakemake.output.lambdas, pd.DataFrame(rows))
    save_csv(snakemake.output.cosine, pd.DataFrame(cos_rows))
    save_json(snakemake.output.summary, summary)
    for f in (snakemake.output.cosine, snakemake.output.summary):
        job.artifact(f, "analysis")
