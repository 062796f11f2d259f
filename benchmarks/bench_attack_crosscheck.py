"""Benchmark: our PGD against foolbox's, robust accuracy and wall time (issue 38 item 5).

The comparison of tests/unit/test_attacks_crosscheck.py on more points and rounds: the
10-class toy MLP and CNN of tests/unit/toy_models.py (8x8 images, trained for a few
seconds), ``--points`` held-out toy images for both nets (the test gives the CNN the first
1000), l_inf and l2 PGD at the test's two radii each, the pgd kind's default budget (50
steps of 0.1 eps, 3 restarts, random start) on both sides; what runs on each side:
tests/unit/attack_crosscheck.py. Per (model, norm, radius)
both attacks run ``--rounds`` times in this process (round r seeds both with r),
alternating which goes first; it prints the mean robust accuracy of each, the largest
per-round ours - foolbox, the median wall time of each and their ratio ours / foolbox
(below 1: ours is faster). Never asserts.

    python benchmarks/bench_attack_crosscheck.py [--points 4000] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import matmul_peak  # noqa: E402
from attack_crosscheck import BUDGET, MODELS, compare, points, table, trained  # noqa: E402


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--points", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import foolbox

    nets = {name: trained(name) for name in MODELS}
    pts = points(args.points)
    compare(nets, points(20))  # warm-up (allocator, kernels, foolbox's imports), not timed
    before = load()
    rows = compare(nets, pts, rounds=args.rounds)
    print(
        f"\nPGD, ours vs foolbox {foolbox.__version__} (torch {torch.__version__}): "
        f"{args.points} toy points, budget {BUDGET}, random start, {args.rounds} round(s), "
        f"threads={args.threads}; matmul peak {matmul_peak():.1f} GFLOP/s"
    )
    print(f"load average (1/5/15 min): before {before}, after {load()} on {os.cpu_count()} cores")
    print(
        "robust: mean over rounds; s: median over rounds; gap: largest per-round ours - foolbox\n"
    )
    print(table(rows))
    for r in rows:
        print(f"{r['model']} {r['norm']} eps={r['eps']:g}: gap {r['gap']:+.4f}")
    ratio = sum(r["ours_s"] for r in rows) / sum(r["theirs_s"] for r in rows)
    print(f"\ntotal time ours / foolbox: {ratio:.2f}")


if __name__ == "__main__":
    main()
