"""Benchmark: the ``cnn`` kind's ``channels_last`` option against the default layout.

For each image CNN of ``config.yaml`` (``madry_cnn_cpu``: Study PRICE-NN's robust-ERM
training; ``cnn_small``: Study FA-IMAGES's training and attacks) it times the pass that PGD
and adversarial training repeat: logits, then the gradient with respect to the input, on a
batch of random images, one thread. Both layouts are built from the same seed (same
weights) and timed alternately, ``--repeats`` rounds of ``--iters`` passes each, so that the
ratio comes from one run on one machine load. It prints the median milliseconds per pass,
the ratio default / channels_last, and the largest relative difference of the input
gradients (float rounding). Never asserts.

    python benchmarks/bench_cnn_layout.py [--repeats 3] [--iters 10]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import yaml
from _machine import matmul_peak

from ibrobust.models.registry import BuildContext, build_model

ROOT = Path(__file__).resolve().parents[1]
CASES = [  # model, input shape, batch (the study's), heads
    ("madry_cnn_cpu", (1, 28, 28), 200, 2),
    ("cnn_small", (1, 28, 28), 500, 10),
    ("cnn_small", (3, 32, 32), 500, 10),
]


def input_gradient(net: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    xg = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(net(xg).logsumexp(1).sum(), xg)
    return g


def per_pass_ms(net: torch.nn.Module, x: torch.Tensor, iters: int) -> float:
    t = time.perf_counter()
    for _ in range(iters):
        input_gradient(net, x)
    return (time.perf_counter() - t) / iters * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(1)
    models = yaml.safe_load((ROOT / "config.yaml").read_text())["models"]
    print(f"fp32 matmul peak {matmul_peak():.0f} GFLOP/s (1 thread)")
    print("| model | input | batch | default ms | channels_last ms | ratio | max rel. diff |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, shape, batch, heads in CASES:
        spec = {k: v for k, v in models[name].items() if k != "channels_last"}
        readout = torch.tensor([1.0, -1.0] * (heads // 2))
        ctx = BuildContext(shape, readout, seed=0)
        nets = {
            "default": build_model(spec, ctx).eval(),
            "channels_last": build_model({**spec, "channels_last": True}, ctx).eval(),
        }
        x = torch.rand(batch, *shape, generator=torch.Generator().manual_seed(0))
        times = {k: [] for k in nets}
        for net in nets.values():
            net.requires_grad_(False)
            input_gradient(net, x)  # warm-up
        for _ in range(args.repeats):
            for key, net in nets.items():
                times[key].append(per_pass_ms(net, x, args.iters))
        med = {k: statistics.median(v) for k, v in times.items()}
        g0, g1 = (input_gradient(n, x) for n in nets.values())
        diff = float((g1 - g0).abs().max() / g0.abs().max().clamp_min(1e-30))
        print(
            f"| {name} | {'x'.join(map(str, shape))} | {batch} | {med['default']:.1f} | "
            f"{med['channels_last']:.1f} | {med['default'] / med['channels_last']:.2f} | "
            f"{diff:.1e} |"
        )


if __name__ == "__main__":
    main()
