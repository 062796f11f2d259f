"""Benchmark: the image CNNs' layer order and memory layout (issue 28, lead 2).

For each image CNN of ``config.yaml`` (``madry_cnn_cpu``: Study PRICE-NN's robust-ERM
training; ``cnn_small``: Study FA-IMAGES's training and attacks; ``margin_cnn_small``:
Study MARGIN's loss-based training in float32 and its float64 robustness job) it times
three builds of the same weights, alternately, ``--repeats`` rounds of ``--iters`` passes
each, so that the ratios come from one run on one machine load:

* ``before``: the conv -> ReLU -> max-pool order of the nets before this change, NCHW;
* ``pool first``: conv -> max-pool -> ReLU (today's order: the same function bit for bit,
  tests/unit/test_image_models.py, test_margin.py), NCHW;
* ``pool first, NHWC``: the same with ``channels_last`` (float rounding aside).

A fourth build, ``before, NHWC``, separates the two changes. Passes: ``eval`` (logits
only, no gradient: Study MARGIN's per-epoch loss over the training set), ``attack`` (logits, then the gradient with respect to the input, what PGD and
FAB repeat) and ``train`` (the gradient with respect to the parameters too). One thread.
It prints the median milliseconds per pass of ``before``, the speed-up of each other build
over it (before / build), and the largest
relative difference of the NHWC input gradient. Never asserts.

    python benchmarks/bench_cnn_layout.py [--repeats 3] [--iters 10]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml
from _machine import matmul_peak

from ibrobust.models.registry import BuildContext, build_model

ROOT = Path(__file__).resolve().parents[1]
CASES = [  # model, input shape, batch (the study's), heads, dtype, passes
    ("madry_cnn_cpu", (1, 28, 28), 200, 2, torch.float32, ("attack", "train")),
    ("cnn_small", (1, 28, 28), 500, 10, torch.float32, ("attack", "train")),
    ("cnn_small", (3, 32, 32), 500, 10, torch.float32, ("attack", "train")),
    ("margin_cnn_small", (1, 28, 28), 100, 10, torch.float32, ("train",)),
    ("margin_cnn_small", (1, 28, 28), 1000, 10, torch.float32, ("eval",)),
    ("margin_cnn_small", (1, 28, 28), 200, 10, torch.float64, ("attack",)),
]


def gradients(net: torch.nn.Module, x: torch.Tensor, train: bool | None) -> torch.Tensor:
    """The input gradient of sum logsumexp(logits) (and, when ``train``, the parameters');
    ``train=None``: the logits alone, without autograd."""
    if train is None:
        with torch.no_grad():
            return net(x)
    xg = x.clone().requires_grad_(True)
    wrt = [xg, *net.parameters()] if train else [xg]
    return torch.autograd.grad(net(xg).logsumexp(1).sum(), wrt)[0]


def per_pass_ms(net: torch.nn.Module, x: torch.Tensor, train: bool | None, iters: int) -> float:
    t = time.perf_counter()
    for _ in range(iters):
        gradients(net, x, train)
    return (time.perf_counter() - t) / iters * 1e3


class ReluFirst(torch.nn.Module):
    """``net`` with each stage's ReLU applied before its max-pool (the order before)."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.net
        if getattr(n, "channels_last", False):
            x = x.contiguous(memory_format=torch.channels_last)
        if hasattr(n, "conv1"):  # homogeneous_cnn
            z = F.max_pool2d(torch.relu(n.conv1(x)), 2)
            z = F.max_pool2d(torch.relu(n.conv2(z)), 2)
            return n.fc2(torch.relu(n.fc1(z.flatten(1))))
        z = (x - n.mean) / n.std
        if n.channels_last:
            z = z.contiguous(memory_format=torch.channels_last)
        convs = [m for m in n.body if isinstance(m, torch.nn.Conv2d)]
        for conv in convs:
            z = F.max_pool2d(torch.relu(conv(z)), 2)
        return n.head(n.body[len(convs) * 3 :](z))


def builds(spec: dict, shape: tuple[int, ...], heads: int, dtype: torch.dtype) -> dict:
    readout = torch.tensor([1.0, -1.0] * (heads // 2))
    ctx = BuildContext(shape, readout, seed=0)
    plain = build_model({**spec, "channels_last": False}, ctx).to(dtype).eval()
    nhwc = build_model({**spec, "channels_last": True}, ctx).to(dtype).eval()
    return {
        "before": ReluFirst(plain),
        "pool first": plain,
        "before, NHWC": ReluFirst(nhwc),
        "pool first, NHWC": nhwc,
    }


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
    print(
        "| model | input | batch | dtype | pass | before ms | pool first | before, NHWC "
        "| pool first, NHWC | max rel. diff NHWC |"
    )
    print("|---|---|---:|---|---|---:|---:|---:|---:|---:|")
    for name, shape, batch, heads, dtype, passes in CASES:
        nets = builds(models[name], shape, heads, dtype)
        x = torch.rand(batch, *shape, generator=torch.Generator().manual_seed(0)).to(dtype)
        for pass_ in passes:
            train = {"eval": None, "attack": False, "train": True}[pass_]
            for net in nets.values():
                net.requires_grad_(bool(train))
                gradients(net, x, train)  # warm-up
            times = {k: [] for k in nets}
            for _ in range(args.repeats):
                for key, net in nets.items():
                    times[key].append(per_pass_ms(net, x, train, args.iters))
            med = {k: statistics.median(v) for k, v in times.items()}
            g0 = gradients(nets["pool first"], x, False)
            g1 = gradients(nets["pool first, NHWC"], x, False)
            diff = float((g1 - g0).abs().max() / g0.abs().max().clamp_min(1e-30))
            b = med["before"]
            ratios = " | ".join(f"{b / med[k]:.2f}x" for k in list(nets)[1:])
            print(
                f"| {name} | {'x'.join(map(str, shape))} | {batch} | {str(dtype)[6:]} | {pass_} "
                f"| {b:.1f} | {ratios} | {diff:.1e} |"
            )


if __name__ == "__main__":
    main()
