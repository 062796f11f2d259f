"""Benchmark: Study FA training throughput at paper scale (d=3072, n=1000, m=5, k=10).

Prints one table, all numbers measured in this run on this machine:
  * the machine's fp32 matmul peak (2048^3 GEMM) at the same thread count;
  * a plain one-seed-at-a-time autograd loop (binary step + multi-class step per seed);
  * the library's Gram-space GD (ibrobust.training.full_batch.train_gd, method="gram"),
    i.e. what each workflow `train` job runs, per supervision;
  * "direct" (autograd in the library) for reference.
A seed-step is one GD step of both supervisions of one seed. GFLOP/s "achieved" counts
the flops actually executed; "effective" counts the plain loop's flops for the same
iterates (the Gram trick executes fewer flops for identical GD iterates).

    python benchmarks/bench_fa_training.py [--threads 1] [--steps 200]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from _machine import matmul_peak

from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.readout import readout_for
from ibrobust.models.two_layer import TwoLayerConfig, init_two_layer
from ibrobust.training.full_batch import GDConfig, train_gd


def plain_loop(x, y, fine, w0, b0, sup, steps, lr=0.5):
    """What a paper's own code typically does: autograd through the full net each step."""
    h, m, d = w0.shape
    w = w0.reshape(h * m, d).clone().requires_grad_(True)
    b = b0.reshape(-1).clone().requires_grad_(True)
    t = time.perf_counter()
    for _ in range(steps):
        heads = torch.relu(x @ w.T + b).reshape(-1, h, m).mean(-1)
        if sup == "binary":
            loss = F.softplus(-y * (heads[:, 0] - heads[:, 1])).mean()
        else:
            loss = F.cross_entropy(heads, fine)
        gw, gb = torch.autograd.grad(loss, [w, b])
        with torch.no_grad():
            w -= lr * gw
            b -= lr * gb
    return time.perf_counter() - t


def library(x, y, fine, w0, b0, readout, sup, steps, method):
    cfg = GDConfig(
        lr=0.5, max_steps=steps, stop_loss=1e-300, n_checkpoints=2, log_every=10**9, method=method
    )
    t = time.perf_counter()
    train_gd(x, y, fine, w0, b0, readout, sup, cfg)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--d", type=int, default=3072)
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    d, n, m, k = args.d, args.n, 5, 10
    data = make_cluster_data(ClusterDataConfig(d=d, k=k, n_train=n, n_test=1), seed=0)
    x, y, fine = data.train.x, data.train.y, data.train.fine
    peak = matmul_peak()
    rows = []
    per_seed = {}
    for method in ("plain", "gram", "direct"):
        total = 0.0
        flops_exec = 0.0
        flops_plain = 0.0
        for sup, heads in (("binary", 2), ("multiclass", k)):
            w0, b0 = init_two_layer(d, heads, TwoLayerConfig(m=m), seed=0)
            nn_ = heads * m
            if method == "plain":
                sec = plain_loop(x, y, fine, w0, b0, sup, args.steps)
            else:
                sec = library(
                    x, y, fine, w0, b0, readout_for(sup, data.sign), sup, args.steps, method
                )
            total += sec
            plain = 2 * 2 * n * d * nn_  # forward X W^T and backward G^T X
            flops_plain += plain * args.steps
            if method == "gram":  # one-off K = X X^T and Z0, then one (n x n)(n x N) per step
                flops_exec += 2 * n * n * d + 2 * n * d * nn_ + 2 * n * n * nn_ * args.steps
            else:
                flops_exec += plain * args.steps
        per_seed[method] = total / args.steps
        rows.append(
            (method, args.steps / total, flops_exec / total / 1e9, flops_plain / total / 1e9)
        )
    print(
        f"\nFA training throughput, d={d} n={n} m={m} k={k}, threads={args.threads}, {args.steps} steps "
        f"(binary + multi-class = one seed-step)"
    )
    print(f"machine fp32 matmul peak (2048^3 GEMM, same threads): {peak:8.1f} GFLOP/s\n")
    print(
        f"{'implementation':<34}{'seed-steps/s':>14}{'achieved GFLOP/s':>18}{'effective GFLOP/s':>19}{'vs plain':>10}"
    )
    names = {
        "plain": "plain autograd loop (per seed)",
        "gram": "ibrobust gram (workflow default)",
        "direct": "ibrobust direct (autograd)",
    }
    for method, sps, ach, eff in rows:
        print(
            f"{names[method]:<34}{sps:>14.1f}{ach:>18.1f}{eff:>19.1f}{per_seed['plain'] / per_seed[method]:>9.2f}x"
        )


if __name__ == "__main__":
    main()
