"""Benchmark: the attack suite's PGD paths against the one-at-a-time path, as ratios in one run.

Setting: Study FA's default PGD (l2, margin loss, ``--steps`` x ``--restarts``, step 0.1 eps)
on a random two-layer net (``--heads`` heads of ``--m`` ReLUs, readout +-1) over ``--n``
Gaussian points in ``--d`` dimensions, labelled by the net itself (all clean-correct), at
``--radii`` (increasing; each radius attacks the points still correct at the smaller one,
as :func:`ibrobust.attacks.suite.correctness_over_radii` does).

Paths, each timed ``--repeats`` times (median), all in this run:
  * ``one-at-a-time``: every restart on every live point (``pgd(..., outcome_only=False)``;
    the suite's path before restarts could stop);
  * ``skip decided``: the suite's path: a point fooled by a restart skips the later ones
    (``outcome_only=True``); its outcomes must equal one-at-a-time's exactly;
  * ``batched over radii``: one ``pgd`` call over all radii x clean-correct points, made
    monotone afterwards. It attacks points already fooled at a smaller radius too and
    draws its random starts in another order, so its outcomes are not the suite's
    (statistically the same attack; the number of (radius, point) outcomes that differ is
    printed): the suite cannot use it without changing results.

    python benchmarks/bench_attack_paths.py [--n 400] [--d 200] [--threads 1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from ibrobust.attacks.losses import binary_correct
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.attacks.suite import AttackContext, correctness_over_radii
from ibrobust.attacks.tables import monotone_robust
from ibrobust.models.two_layer import TwoLayerFixed
from ibrobust.seeding import torch_generator


def setup(args):
    g = torch_generator(0, "bench_attack_paths", "net")
    w = torch.randn(args.heads, args.m, args.d, generator=g) / args.d**0.5
    readout = torch.where(torch.arange(args.heads) % 2 == 0, 1.0, -1.0)
    net = TwoLayerFixed(w, 0.1 * torch.randn(args.heads, args.m, generator=g), readout)
    x = torch.randn(args.n, args.d, generator=g)
    with torch.no_grad():
        y = torch.sign(net.binary_score(x))
    return net, x, y, torch.zeros(args.n, dtype=torch.long)


def per_radius(net, x, y, fine, radii, cfg, outcome_only) -> torch.Tensor:
    gen = torch_generator(1, "bench_attack_paths", "attack")
    alive = binary_correct(net, x, y)
    out = torch.zeros(len(radii), len(x), dtype=torch.bool)
    for i, r in enumerate(radii):
        idx = torch.nonzero(alive).flatten()
        if idx.numel():
            adv = pgd(net, x[idx], y[idx], fine[idx], [r], "margin", cfg, gen,
                      outcome_only=outcome_only)[0]  # fmt: skip
            alive[idx] = binary_correct(net, adv, y[idx])
        out[i] = alive
    return out


def batched(net, x, y, fine, radii, cfg) -> torch.Tensor:
    gen = torch_generator(1, "bench_attack_paths", "attack")
    clean = binary_correct(net, x, y)
    idx = torch.nonzero(clean).flatten()
    adv = pgd(net, x[idx], y[idx], fine[idx], radii, "margin", cfg, gen)  # (R, n', d)
    out = torch.zeros(len(radii), len(x), dtype=torch.bool)
    out[:, idx] = torch.stack([binary_correct(net, a, y[idx]) for a in adv])
    return monotone_robust(out, radii)


def timed(fn, repeats):
    """(median CPU-seconds of this process, median wall seconds, result): with one torch
    thread CPU-seconds hardly depend on the machine's load, wall does."""
    cpu, wall, result = [], [], None
    for _ in range(repeats):
        c, t = time.process_time(), time.perf_counter()
        result = fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - t)
    return (statistics.median(cpu), statistics.median(wall)), result


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for name, default in [("n", 400), ("d", 200), ("heads", 2), ("m", 20), ("steps", 50),
                          ("restarts", 3), ("threads", 1), ("repeats", 3)]:  # fmt: skip
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--radii", type=float, nargs="+", default=[0.1, 0.2, 0.4, 0.6, 0.8, 1.2])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    net, x, y, fine = setup(args)
    cfg = PGDConfig(norm="l2", steps=args.steps, restarts=args.restarts, step_size=0.1)
    base_t, base = timed(lambda: per_radius(net, x, y, fine, args.radii, cfg, False), args.repeats)
    skip_t, skip = timed(lambda: per_radius(net, x, y, fine, args.radii, cfg, True), args.repeats)
    bat_t, bat = timed(lambda: batched(net, x, y, fine, args.radii, cfg), args.repeats)
    spec = {"kind": "pgd", "norm": "l2", "loss": "margin", "steps": args.steps,
            "restarts": args.restarts, "step_size": 0.1}  # fmt: skip
    suite = correctness_over_radii(net, x, y, fine, args.radii, spec, AttackContext(),
                                   torch_generator(1, "bench_attack_paths", "attack"))  # fmt: skip
    print(f"load {' '.join(f'{v:.1f}' for v in os.getloadavg())}; n={args.n} d={args.d} "
          f"steps={args.steps} restarts={args.restarts} threads={args.threads}; "
          f"median of {args.repeats}")  # fmt: skip
    print(
        "robust acc per radius (one-at-a-time):",
        [round(v, 3) for v in base.float().mean(1).tolist()],
    )
    print("| path | CPU-s | wall-s | CPU / one-at-a-time | outcomes differing from one-at-a-time |")
    print("|---|---:|---:|---:|---:|")
    for name, t, res in [("one-at-a-time", base_t, base), ("skip decided", skip_t, skip),
                         ("batched over radii", bat_t, bat)]:  # fmt: skip
        ratio, diff = t[0] / base_t[0], int((res != base).sum())
        print(f"| {name} | {t[0]:.2f} | {t[1]:.2f} | {ratio:.2f} | {diff} |")
    print(f"attack suite (correctness_over_radii) equals skip decided: {torch.equal(suite, skip)}")


if __name__ == "__main__":
    main()
