"""Benchmark: Study PRELU synthetic training throughput (samples/s), p = 1 and p = 3.

SGD lr 0.2, batch 100, exponential loss, init std 1e-7, K=10 standard-basis centres
(6 positive), alpha=0.1; at the paper's D=1000, h=2000 with n=20000 (one epoch = 200 SGD
steps) and at a CPU scale (``--cpu-d``/``--cpu-h``/``--cpu-n``, default D=200, h=200,
n=4000). Prints one table, never asserts. All numbers are measured in this run, at
``--threads`` threads:

  * the machine's fp32 matmul peak (2048^3 GEMM);
  * official loop (DataLoader): a faithful re-implementation of the official loop
    (``prelu_f_dist.py``): ``DataLoader(TensorDataset, batch_size=100, shuffle=True)``,
    ``ShallowPreluNet``'s forward ``relu(x @ W) ** p / ||W||_cols ** (p-1)`` with W (D, h),
    an ``nn.Linear(h, 1, bias=False)`` head, loss ``exp(-y f).mean()``, ``backward``,
    ``torch.optim.SGD`` step, ``zero_grad``;
  * official loop, no DataLoader: the same autograd step fed by tensor slicing (where
    the time goes);
  * ibrobust per run: ``ibrobust.training.prelu.train_prelu`` (manual backward, fused
    in-place update);
  * ibrobust sweep S: ``train_prelu_sweep`` on S runs (alphas x seeds) as one program;
    throughput counted per run-equivalent (S * samples / wall time);
  * ", bf16" rows: the same with ``matmul="bf16"`` (the two big products take bfloat16
    operands with fp32 accumulation; weights and everything else stay fp32). The last
    column compares with our fp32 per-run row.

Each row times one epoch (n / 100 steps) after a warm-up, best of ``--repeats``. GFLOP/s
counts the two big products per step (forward x W^T, backward g^T x: 4 B D h flops).
"per CPU-s" divides by the process CPU time instead of wall time (on a shared machine
it is the better estimate of what an idle core would do, for 1 thread). The last lines
project the paper protocol: 15 alphas x 5 seeds x p in {1, 3} x 401 epochs x n=20000.

    python benchmarks/bench_prelu_training.py [--threads 2] [--cpu-h 200] [--sweep 4] [--matmul fp32]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from functools import partial

import torch
from _machine import matmul_peak
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.prelu import PreluConfig, build_prelu, init_prelu, prelu_readout
from ibrobust.training.prelu import PreluTrainConfig, train_prelu, train_prelu_sweep

K, K_POS, LR, BATCH, STD, ALPHA = 10, 6, 0.2, 100, 1e-7, 0.1


def synthetic(d: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Study PRELU data: standard-basis unit centres, 6 positive / 4 negative, noise alpha/sqrt(D)."""
    cfg = ClusterDataConfig(
        d=d, k=K, n_train=n, n_test=1, sigma=ALPHA / math.sqrt(d), basis="standard", mean_norm=1.0
    )
    data = make_cluster_data(cfg, seed)  # balanced J+ by construction; relabel 6 / 4 below
    y = torch.where(data.train.fine < K_POS, 1.0, -1.0)
    return data.train.x, y


class OfficialPrelu(nn.Module):
    """The official ShallowPreluNet (center None, bias False, output_dim 1) for the synthetic run."""

    def __init__(self, d: int, h: int, g: torch.Generator):
        super().__init__()
        self.W = nn.Parameter(torch.randn(d, h, generator=g) * STD)  # (D, h), official layout
        self.out = nn.Linear(h, 1, bias=False)
        with torch.no_grad():
            self.out.weight.copy_(torch.randn(1, h, generator=g) * STD)
        self.register_buffer("center", torch.zeros(1, d))

    def forward(self, xb: torch.Tensor, p: float) -> torch.Tensor:
        xb = xb - self.center
        if p > 1:
            xh = torch.div(
                torch.pow(torch.relu(xb @ self.W), p),
                torch.pow(torch.linalg.norm(self.W, dim=0), p - 1),
            )
        else:
            xh = torch.relu(xb @ self.W)
        return self.out(xh)


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(t0: tuple[float, float]) -> tuple[float, float]:
    t1 = _clock()
    return t1[0] - t0[0], t1[1] - t0[1]


def time_official(x, y, h, p, loader: bool, warmup: int = 5) -> tuple[float, float]:
    torch.manual_seed(0)
    model = OfficialPrelu(x.shape[1], h, torch.Generator().manual_seed(0))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    if loader:
        batches = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True)
    else:
        perm = torch.randperm(x.shape[0])
        batches = [
            (x[perm[i : i + BATCH]], y[perm[i : i + BATCH]]) for i in range(0, len(x), BATCH)
        ]

    def step(xb, yb):
        pred = model(xb, p)
        loss = (-pred.reshape(-1) * yb).exp().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()

    for i, (xb, yb) in enumerate(batches):
        if i == warmup:
            break
        step(xb, yb)
    t0 = _clock()
    for xb, yb in batches:  # one epoch (a fresh iterator: the DataLoader reshuffles)
        step(xb, yb)
    return _since(t0)


def nets(d: int, h: int, p: float, count: int):
    cfg = PreluConfig(width=h, p=p, init_std=STD)
    return [
        build_prelu(init_prelu(d, 1, cfg, seed=s), prelu_readout("binary"), cfg)
        for s in range(count)
    ]


def time_ours(x, y, h, p, matmul: str = "fp32") -> tuple[float, float]:
    cfg = PreluTrainConfig(lr=LR, batch_size=BATCH, epochs=1, matmul=matmul)
    d = x.shape[1]
    train_prelu(nets(d, h, p, 1)[0], x[: 5 * BATCH], y[: 5 * BATCH], cfg, seed=0)  # warm-up
    net = nets(d, h, p, 1)[0]
    t0 = _clock()
    train_prelu(net, x, y, cfg, seed=0)
    return _since(t0)


def time_sweep(xs, ys, h, p, matmul: str = "fp32") -> tuple[float, float]:
    s, d = xs.shape[0], xs.shape[2]
    cfg = PreluTrainConfig(lr=LR, batch_size=BATCH, epochs=1, matmul=matmul)
    warm = nets(d, h, p, s)
    train_prelu_sweep(warm, xs[:, : 5 * BATCH], ys[:, : 5 * BATCH], cfg, list(range(s)))
    ns = nets(d, h, p, s)
    t0 = _clock()
    train_prelu_sweep(ns, xs, ys, cfg, list(range(s)))
    return _since(t0)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n", type=int, default=20000, help="samples per timed epoch (paper 20000)")
    ap.add_argument("--h", type=int, default=2000, help="paper width (0: skip)")
    ap.add_argument("--sweep", type=int, nargs="*", default=[4], help="sweep sizes S (paper width)")
    ap.add_argument("--cpu-h", type=int, default=200, help="CPU-scale width (0: skip)")
    ap.add_argument("--cpu-d", type=int, default=200, help="CPU-scale input dimension")
    ap.add_argument("--cpu-n", type=int, default=4000, help="samples per epoch at CPU scale")
    ap.add_argument(
        "--cpu-sweep", type=int, nargs="*", default=[4, 8, 16], help="sweep sizes S (CPU scale)"
    )
    ap.add_argument("--ps", type=float, nargs="*", default=[1.0, 3.0])
    ap.add_argument("--repeats", type=int, default=2, help="best of r timings per row")
    ap.add_argument("--skip-loader", action="store_true", help="skip the DataLoader row")
    ap.add_argument(
        "--matmul",
        nargs="+",
        choices=["fp32", "bf16"],
        default=["fp32", "bf16"],
        help="operand precisions of our big products to time (PreluTrainConfig.matmul)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    load0 = os.getloadavg()
    peak = matmul_peak()
    rows = []  # (impl, d, h, p, wall samples/s, samples per CPU-s)
    scales = []
    if args.h:
        scales.append((1000, args.h, args.n, args.sweep))
    if args.cpu_h:
        scales.append((args.cpu_d, args.cpu_h, args.cpu_n, args.cpu_sweep))
    for d, h, n, sweeps in scales:
        data = [synthetic(d, n, seed) for seed in range(max([1, *sweeps]))]
        x, y = data[0]
        for p in args.ps:
            impls = []
            if not args.skip_loader:
                impls.append(
                    ("official loop (DataLoader)", partial(time_official, x, y, h, p, True), 1)
                )
            impls.append(
                ("official loop, no DataLoader", partial(time_official, x, y, h, p, False), 1)
            )
            for mm in args.matmul:
                tag = "" if mm == "fp32" else f", {mm}"
                impls.append((f"ibrobust per run{tag}", partial(time_ours, x, y, h, p, mm), 1))
                for s in sweeps:
                    xs = torch.stack([dd[0] for dd in data[:s]])
                    ys = torch.stack([dd[1] for dd in data[:s]])
                    impls.append(
                        (f"ibrobust sweep S={s}{tag}", partial(time_sweep, xs, ys, h, p, mm), s)
                    )
            for name, fn, runs in impls:
                wall, cpu = min(fn() for _ in range(args.repeats))
                rows.append((name, d, h, p, runs * n / wall, runs * n / cpu))
    load1 = os.getloadavg()

    print(
        f"\nStudy PRELU synthetic training: batch {BATCH}, SGD lr {LR}, exp loss, init std {STD:g}, "
        f"threads={args.threads}; one epoch per timing (n={args.n} at D=1000, n={args.cpu_n} at "
        f"D={args.cpu_d}), best of {args.repeats}"
    )
    print(
        f"load average (1/5/15 min) at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
        f"at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} (2 cores)"
    )
    print(f"machine fp32 matmul peak (2048^3 GEMM, {args.threads} threads): {peak:.1f} GFLOP/s")
    print("GFLOP/s counts 4 B D h flops per step (forward x W^T, backward g^T x) per wall second;")
    print("'per CPU-s' = samples per second of process CPU time (all threads), robust to load.\n")
    print("'% peak' is against the fp32 peak, also for bf16 rows (bfloat16 products run up to")
    print("~4x faster than fp32 ones on CPUs with AVX512-BF16, so bf16 rows may exceed 100%).\n")
    print(
        f"{'implementation':<34}{'D':>5}{'h':>6}{'p':>3}{'samples/s':>11}{'GFLOP/s':>9}"
        f"{'% peak':>7}{'per CPU-s':>11}{'vs official':>12}{'vs per run':>11}"
    )
    base, ours = {}, {}
    for name, d, h, p, sps, _ in rows:
        if name.startswith("official") and ((d, h, p) not in base):
            base[(d, h, p)] = sps
        if name == "ibrobust per run":
            ours[(d, h, p)] = sps
    for name, d, h, p, sps, spc in rows:
        gf = sps * 4 * d * h / 1e9
        rel = sps / base[(d, h, p)]
        mine = f"{sps / ours[(d, h, p)]:>10.2f}x" if (d, h, p) in ours else f"{'-':>11}"
        print(
            f"{name:<34}{d:>5}{h:>6}{p:>3g}{sps:>11.0f}{gf:>9.1f}{100 * gf / peak:>6.0f}%"
            f"{spc:>11.0f}{rel:>11.2f}x{mine}"
        )

    if args.h:
        print(
            "\nprojected training cost of the paper protocol (15 alphas x 5 seeds x p in {1, 3}, "
            f"401 epochs x n=20000, D=1000, h={args.h}) at the measured wall throughput:"
        )
        for name in dict.fromkeys(r[0] for r in rows if r[1] == 1000):
            sps = {r[3]: r[4] for r in rows if r[0] == name and r[1] == 1000}
            if {1.0, 3.0} <= sps.keys():
                hours = sum(75 * 401 * 20000 / sps[p] for p in (1.0, 3.0)) / 3600
                print(f"  {name:<34}{hours:7.1f} h")


if __name__ == "__main__":
    main()
