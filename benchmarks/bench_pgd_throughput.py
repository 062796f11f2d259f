"""Benchmark: PGD throughput on the MNIST-shaped CNN, ours vs AutoAttack's APGD-CE.

Prints one table, all numbers measured in this run on this machine (never asserts):
  * ``ibrobust pgd``: :func:`ibrobust.attacks.pgd.pgd`, cross-entropy on the fine label,
    task ``fine``, box (0, 1), ``restarts`` x ``steps``, random start;
  * ``APGD-CE (pyautoattack)``: the official ``APGDAttack`` (loss 'ce') called directly,
    ``n_restarts`` x ``n_iter`` with the same number of iterations;
  * ``ibrobust autoattack``: our wrapper, ``version='standard', attacks=['apgd-ce']`` (the
    same APGD plus AutoAttack's own passes: randomness/range/dynamic checks on the first
    batch, clean accuracy, and our final judgement).
Same model, inputs, batch size (= all points in one batch by default) and torch threads.

Model: ``build_model({"kind": "cnn"}, BuildContext((1, 28, 28), readout, seed))``
(conv32-5x5/pool, conv64-5x5/pool, fc256, 10 heads) with its *random* initial weights
(PyTorch's default init), on uniform random images in [0, 1]; throughput does not depend
on the weights. The labels are the model's own predictions, so every point starts
correctly classified and is attacked by all three: none of them stops early within a run
(APGD keeps iterating on points it already fooled; it skips fooled points only *between*
restarts, and AutoAttack only attacks clean-correct points), so the work is the same
whatever the radius. Parameters are frozen in all three.

examples/s = examples x restarts / seconds. "grad evals" per example and restart: ours
``steps`` forward+backward passes (plus two forward passes to judge the restart), APGD
``n_iter + 1`` (it takes a gradient at the starting point too).

    python benchmarks/bench_pgd_throughput.py [--threads 1] [--n 500] [--steps 100] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from ibrobust.attacks.autoattack import AutoAttackConfig, autoattack
from ibrobust.attacks.mode import attack_mode
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.models.registry import BuildContext, build_model
from ibrobust.seeding import torch_generator

EPS = {"l2": 0.5, "linf": 0.03}  # radii of the MNIST tables' order; work does not depend on it
AA_NORM = {"l2": "L2", "linf": "Linf"}


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def run_ours(net, x, y, fine, norm, args) -> tuple[float, torch.Tensor]:
    cfg = PGDConfig(
        norm=norm, steps=args.steps, restarts=args.restarts, step_size=2.5 / args.steps,
        batch_size=args.batch_size,
    )  # fmt: skip
    t = time.perf_counter()
    adv = pgd(
        net,
        x,
        y,
        fine,
        [EPS[norm]],
        "ce",
        cfg,
        torch_generator(0, "bench"),
        (0.0, 1.0),
        task="fine",
    )
    return time.perf_counter() - t, adv[0]


def run_apgd(net, x, y, fine, norm, args) -> tuple[float, torch.Tensor]:
    from pyautoattack.autopgd_base import APGDAttack

    apgd = APGDAttack(
        net, n_iter=args.steps, norm=AA_NORM[norm], n_restarts=args.restarts, eps=EPS[norm],
        seed=0, loss="ce", device=x.device,
    )  # fmt: skip
    t = time.perf_counter()
    with attack_mode(net), torch.random.fork_rng(devices=[]):
        advs = [apgd.perturb(x[lo : lo + args.batch_size], fine[lo : lo + args.batch_size])
                for lo in range(0, len(x), args.batch_size)]  # fmt: skip
    return time.perf_counter() - t, torch.cat(advs)


def run_wrapper(net, x, y, fine, norm, args) -> tuple[float, torch.Tensor]:
    cfg = AutoAttackConfig(
        norm=norm, attacks=["apgd-ce"], batch_size=args.batch_size, n_iter=args.steps
    )
    if args.restarts != 1:
        cfg = AutoAttackConfig(**{**cfg.__dict__, "n_restarts": args.restarts})
    t = time.perf_counter()
    res = autoattack(net, x, y, fine, EPS[norm], cfg, seed=0, box=(0.0, 1.0), task="fine")
    return time.perf_counter() - t, res.x_adv


IMPLEMENTATIONS = (
    ("ibrobust pgd", run_ours),
    ("APGD-CE (pyautoattack)", run_apgd),
    ("ibrobust autoattack (std, apgd-ce)", run_wrapper),
)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--restarts", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--norms", nargs="+", default=["l2", "linf"], choices=sorted(EPS))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    readout = torch.where(torch.arange(10) < 5, 1.0, -1.0)
    net = build_model({"kind": "cnn"}, BuildContext((1, 28, 28), readout, 0)).eval()
    x = torch.rand(args.n, 1, 28, 28, generator=torch_generator(0, "bench", "x"))
    with torch.no_grad():
        fine = torch.cat([net(x[lo : lo + 500]).argmax(1) for lo in range(0, args.n, 500)])
    y = readout[fine]
    # warm-up (allocator, kernels) on a few points, not timed
    warm = argparse.Namespace(**{**vars(args), "steps": 2, "batch_size": 8})
    for norm in args.norms:
        run_ours(net, x[:8], y[:8], fine[:8], norm, warm)
        run_apgd(net, x[:8], y[:8], fine[:8], norm, warm)
    load_before = load()
    # repeats are interleaved (implementation, norm) so that load changes hit all alike
    secs: dict[tuple[str, str], list[float]] = {}
    fooled: dict[tuple[str, str], float] = {}
    for _ in range(args.repeats):
        for norm in args.norms:
            for name, fn in IMPLEMENTATIONS:
                sec, adv = fn(net, x, y, fine, norm, args)
                secs.setdefault((name, norm), []).append(sec)
                with torch.no_grad():
                    fooled[name, norm] = (net(adv).argmax(1) != fine).float().mean().item()
    print(
        f"\nPGD throughput, CNN (1x28x28 -> 10 heads, random init), n={args.n} random images, "
        f"{args.steps} iterations x {args.restarts} restart(s), batch {args.batch_size}, "
        f"threads={args.threads}, eps l2={EPS['l2']} linf={EPS['linf']}, "
        f"median (min) of {args.repeats} interleaved repeat(s)"
    )
    print(
        f"load average (1/5/15 min): before {load_before}, after {load()} on {os.cpu_count()} cores"
    )
    print(
        "examples/s = examples x restarts / median seconds; speed = our median s / its median s\n"
    )
    print(
        f"{'implementation':<36}{'norm':>6}{'grad evals':>12}{'median s':>10}{'(min s)':>9}"
        f"{'examples/s':>12}{'speed':>8}{'fooled':>8}"
    )
    for norm in args.norms:
        ours = statistics.median(secs["ibrobust pgd", norm])
        for name, _ in IMPLEMENTATIONS:
            t = secs[name, norm]
            med = statistics.median(t)
            evals = args.steps if name == "ibrobust pgd" else args.steps + 1
            print(
                f"{name:<36}{norm:>6}{evals:>12}{med:>10.2f}{min(t):>9.2f}"
                f"{args.n * args.restarts / med:>12.1f}{ours / med:>7.2f}x{fooled[name, norm]:>8.2f}"
            )


if __name__ == "__main__":
    main()
