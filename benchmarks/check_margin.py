"""Manual check of Study MARGIN: what float32 would change (prints, never asserts).

The study itself runs in the workflow (``snakemake --cores all margin --config
data_root=DIR``: training, per-checkpoint robustness, figures and summary through
:mod:`ibrobust.studies.margin.experiment` and :mod:`ibrobust.studies.margin.tables`). This
script reads one run's ``checkpoints.pt`` and dataset file and measures, per checkpoint,
what training the net in float32 would change: log10 L and q_min evaluated in both dtypes
and the cosine between the float32 and float64 gradients of log L on one batch (the reason
the study trains in float64 at CPU scale).

    python benchmarks/check_margin.py --run RESULTS/margin/<dataset>/<model>/seed0 \\
        --data RESULTS/datasets/<dataset>/seed0/data.npz --model '{"kind": "homogeneous_cnn",
        "channels": [8, 16], "kernels": [5, 3], "hidden": [128]}'
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import torch

from ibrobust.analysis.margin import (
    eval_logits,
    log_ce,
    log_mean_loss,
    param_norm,
    stats_from_logits,
)
from ibrobust.io import load_npz, load_torch
from ibrobust.studies.margin.experiment import load_checkpoints, run_data


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--run", required=True, help="a margin run directory (checkpoints.pt)")
    ap.add_argument("--data", required=True, help="its dataset file (data.npz)")
    ap.add_argument("--model", required=True, help="the models entry as JSON")
    ap.add_argument("--supervision", default="multiclass")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    data = run_data(load_npz(args.data), args.supervision)
    saved = load_torch(Path(args.run) / "checkpoints.pt")
    nets = load_checkpoints(saved, json.loads(args.model), data, args.supervision, args.seed)
    x, y = data.x, data.y
    for name, net64 in nets.items():
        out = {}
        for dt, net in (("float32", copy.deepcopy(net64).float()), ("float64", net64)):
            degree = net.homogeneity_degree if hasattr(net, "homogeneity_degree") else 1
            s = stats_from_logits(eval_logits(net, x), y, param_norm(net), degree)
            net.zero_grad()
            log_mean_loss(log_ce(net(x[:100].to(next(net.parameters()).dtype)), y[:100])).backward()
            out[dt] = (s, torch.cat([p.grad.flatten().double() for p in net.parameters()]))
        (s32, g32), (s64, g64) = out["float32"], out["float64"]
        cos = float(g32 @ g64 / (g32.norm() * g64.norm()))
        print(
            f"{name}: log10 L f32 {s32.log10_loss:.6f} f64 {s64.log10_loss:.6f} "
            f"(diff {s32.log10_loss - s64.log10_loss:.2e}); q_min f32 {s32.q_min:.6f} "
            f"f64 {s64.q_min:.6f}; grad log L cosine {cos:.8f}"
        )


if __name__ == "__main__":
    main()
