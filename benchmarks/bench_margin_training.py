"""Seconds per epoch: SGD with the loss-based learning rate (ibrobust.training.margin) vs a
plain PyTorch SGD loop, on the same homogeneous CNN, MNIST subset and batch size.

An epoch of ours = the mini-batch steps on log L_B (float64 log-sum-exp of the logit
differences) + the snapshot for a possible roll-back + one evaluation of the whole training
set (float64 logits -> log L, q_min, rho, the margins) that the schedule needs to accept
or redo the epoch. "attempts" counts redone epochs too: the time per attempt is what an
epoch costs. Plain = ``F.cross_entropy`` + ``torch.optim.SGD`` (fixed lr), no evaluation.
CPU seconds (``time.process_time``) are reported next to wall seconds: on a shared machine
only their ratio within one run is meaningful.

    python benchmarks/bench_margin_training.py --root DIR --n 500 --epochs 3
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from _machine import matmul_peak

from ibrobust.data.images import ImageDataConfig, make_image_data
from ibrobust.models.homogeneous_cnn import HomogeneousCNNConfig, build_homogeneous_cnn
from ibrobust.seeding import torch_generator
from ibrobust.training.margin import MarginTrainConfig, train_margin
from ibrobust.updates.loss_based import LossBasedLRConfig

DTYPES = {"float64": torch.float64, "float32": torch.float32}


def plain_sgd(net, x, y, epochs: int, batch: int, lr: float, seed: int) -> None:
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    gen = torch_generator(seed, "bench", "batches")
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=gen).split(batch):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(net(x[idx]), y[idx]).backward()
            opt.step()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--root", required=True, help="data_root holding MNIST/raw")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=list(DTYPES))
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads {args.threads}; fp32 matmul peak {matmul_peak():.1f} GFLOP/s")
    d = make_image_data(ImageDataConfig(source="mnist", n_train=args.n, n_test=10), 0, args.root)
    x0 = torch.from_numpy(d.train.x).double() / 255.0
    y = torch.from_numpy(d.train.label)
    print(f"MNIST n={args.n}, batch {args.batch}, {args.epochs} epochs each")
    print(f"{'dtype':>8} {'loop':>12} {'attempts':>9} {'CPU s/epoch':>12} {'wall s/epoch':>13}")
    for name in args.dtypes:
        dt = DTYPES[name]
        x = x0.to(dt)
        net = build_homogeneous_cnn((1, 28, 28), 10, HomogeneousCNNConfig(), 0, dtype=dt)
        c0, w0 = time.process_time(), time.perf_counter()
        plain_sgd(net, x, y, args.epochs, args.batch, 0.01, 0)
        plain = (time.process_time() - c0) / args.epochs, (time.perf_counter() - w0) / args.epochs
        print(f"{name:>8} {'plain SGD':>12} {args.epochs:>9} {plain[0]:>12.3f} {plain[1]:>13.3f}")
        net = build_homogeneous_cnn((1, 28, 28), 10, HomogeneousCNNConfig(), 0, dtype=dt)
        cfg = MarginTrainConfig(
            epochs=args.epochs,
            batch_size=args.batch,
            schedule=LossBasedLRConfig(alpha=0.01),
            checkpoint_log10_losses=(),
            dtype=name,
        )
        c0, w0 = time.process_time(), time.perf_counter()
        res = train_margin(net, x, y, cfg, seed=0)
        attempts = args.epochs + res.rollbacks
        ours = (time.process_time() - c0) / attempts, (time.perf_counter() - w0) / attempts
        print(f"{name:>8} {'loss-based':>12} {attempts:>9} {ours[0]:>12.3f} {ours[1]:>13.3f}")
        print(
            f"{name:>8} ratio loss-based / plain per epoch: CPU {ours[0] / plain[0]:.2f}, "
            f"wall {ours[1] / plain[1]:.2f}"
        )


if __name__ == "__main__":
    main()
