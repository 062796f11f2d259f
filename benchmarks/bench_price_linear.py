"""Throughput of vectorised robust ERM (PRICE-LIN) vs one run at a time, measured in one process.

Prints, per algorithm and torch thread count, problem-iterations per second for

* ``one-at-a-time``: ``train_robust_erm`` on each problem alone (B = 1), in a loop;
* ``vectorised``: all problems in one call, default cache-sized sub-batches;
* ``vectorised-1chunk``: all problems as one tensor program (no sub-batching).

Usage: .venv/bin/python benchmarks/bench_price_linear.py [--d 512] [--n 512] [--problems 32]
[--iters 100] [--threads 1 2]. No stopping (loss_threshold = 0), so every problem runs exactly
``--iters`` steps; eps = 0.5 gamma* of the first draw, the paper's d = 512 dense +-1 teacher.
"""

from __future__ import annotations

import argparse
import time

import torch

from ibrobust.analysis.linear_margin import linf_margin
from ibrobust.data.teacher import TeacherConfig, make_teacher_batch
from ibrobust.training.robust_erm import ALGORITHMS, RobustERMConfig, train_robust_erm


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--problems", type=int, default=32)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()

    cfg = TeacherConfig(d=args.d, k_w=args.d, k_x=args.d, n_train=args.n, n_test=1)
    batch = make_teacher_batch(cfg, seed=0, draws=range(args.problems))
    x, y = batch.x_train, batch.y_train  # (B, n, d), (B, n)
    eps = 0.5 * linf_margin(x[0], y[0]).gamma
    bsz, k = args.problems, args.iters
    print(f"d={args.d} n={args.n} problems={bsz} iters={k} eps={eps:.4g} float64")
    print(f"{'algorithm':<9} {'threads':>7} {'mode':<18} {'prob-iters/s':>13} {'speedup':>8}")
    saved = torch.get_num_threads()
    try:
        for threads in args.threads:
            torch.set_num_threads(threads)
            for alg in ALGORITHMS:
                rc = RobustERMConfig(algorithm=alg, max_iters=k, loss_threshold=0.0)
                train_robust_erm(
                    x[:2], y[:2], eps, RobustERMConfig(algorithm=alg, max_iters=5)
                )  # warm-up
                t_one = timed(
                    lambda rc=rc: [
                        train_robust_erm(x[b : b + 1], y[b : b + 1], eps, rc) for b in range(bsz)
                    ]
                )
                t_vec = timed(lambda rc=rc: train_robust_erm(x, y, eps, rc))
                t_big = timed(lambda rc=rc: train_robust_erm(x, y, eps, rc, chunk_bytes=1 << 62))
                for mode, t in (
                    ("one-at-a-time", t_one),
                    ("vectorised", t_vec),
                    ("vectorised-1chunk", t_big),
                ):
                    print(
                        f"{alg:<9} {threads:>7} {mode:<18} {bsz * k / t:>13.0f} {t_one / t:>7.2f}x"
                    )
    finally:
        torch.set_num_threads(saved)


if __name__ == "__main__":
    main()
