"""Robust-ERM epoch time: our trainer (train_network + adversarial option) vs a plain loop.

Same net (Study PRICE-NN's FC net or its CPU-scale Madry CNN, ``madry_cnn_cpu``: use
``--width 32``), same data (MNIST 2 vs 7, n images), same algorithm (full-batch GD or sign descent), same attack (l_inf PGD, 10 steps
of 2.5 eps / 10, random start, box [0, 1]). The plain loop is what one writes by hand in
PyTorch: perturb with PGD on the training loss, one backward, one manual parameter update.
Both run ``--epochs`` epochs after one warm-up round; the rounds alternate, in turns,
so that load changes of a shared machine hit both and neither always runs first. Prints per-epoch times and our/plain ratio (goal: <= 1).

With ``--baseline OTHER_CHECKOUT`` each round runs twice more, in fresh interpreters that
import the library of the other checkout and of this one in turn (same script, same plain
loop; each child warms up, then measures one round in each order): the ours/plain ratio of both checkouts and their
ours-before / ours-after ratio come from one alternating run.

    python benchmarks/bench_price_nn.py --data-root DIR [--arch fc|cnn] [--n 100]
        [--baseline OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from _machine import matmul_peak

from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.data.images import make_dataset
from ibrobust.models.fc import FCConfig, build_fc
from ibrobust.models.image import ImageModelConfig, build_image_model
from ibrobust.seeding import torch_generator
from ibrobust.training.network import NetTrainConfig, net_train_fields, train_network

MNIST_2V7 = {"kind": "image", "source": "mnist", "split": "explicit", "positive": [2],
             "negative": [7], "download": False}  # fmt: skip


def make_net(arch: str, shape, width: int):
    gen = torch_generator(0, "bench", arch)
    if arch == "fc":
        return build_fc(FCConfig(width=width, init_scale=0.1), shape, torch.ones(1), gen)
    # Study PRICE-NN's CNN (config.yaml madry_cnn_cpu) with ``--width`` dense units
    cfg = ImageModelConfig(kind="cnn", channels=(4, 8), kernel=5, hidden=(width,),
                           channels_last=True)  # fmt: skip
    return build_image_model(cfg, shape, torch.tensor([1.0, -1.0]), gen)


def train_loss(arch: str, net, x, y):
    s = net.binary_score(x)
    return torch.exp(-y * s).mean() if arch == "fc" else F.softplus(-y * s).mean()


def plain_loop(arch, net, x, y, eps, lr, algorithm, epochs, gen):
    """Hand-written robust ERM: PGD (random start, sign steps, ball, box), then one step."""
    alpha = 2.5 * eps / 10
    params = list(net.parameters())
    for _ in range(epochs):
        delta = (2 * torch.rand(x.shape, generator=gen) - 1) * eps
        delta = (x + delta).clamp(0, 1) - x
        for _ in range(10):
            delta.requires_grad_(True)
            (g,) = torch.autograd.grad(-(y * net.binary_score(x + delta)).sum(), delta)
            with torch.no_grad():
                delta = (delta + alpha * g.sign()).clamp(-eps, eps)
                delta = (x + delta).clamp(0, 1) - x
        loss = train_loss(arch, net, x + delta, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(g.sign() if algorithm == "sd" else g, alpha=lr)


def ours(arch, net, x, y, eps, lr, algorithm, epochs):
    """The workflow's path: an optimizers entry (gd; sd = norm linf, scale unit) with an
    adversarial block, through net_train_fields, NetTrainConfig and train_network."""
    norm = {"norm": "linf", "scale": "unit"} if algorithm == "sd" else {"norm": "l2"}
    entry = {"kind": "gd", "lr": lr, "max_steps": epochs, "log_every": epochs, **norm,
             "loss": "exponential" if arch == "fc" else "auto", "adversarial": {"eps": eps}}  # fmt: skip
    cfg = NetTrainConfig(**net_train_fields(entry))
    train_network(net, x, y, (y < 0).long(), "binary", cfg, 0, "cpu")


def measure(args, data) -> dict[str, list[float]]:
    """CPU-seconds per epoch of ours and the plain loop, alternating, after a warm-up round."""
    x, y = data.train.x, data.train.y
    lr = 1e-4 if args.algorithm == "sd" else 1e-2
    times: dict[str, list[float]] = {"ours": [], "plain": []}
    for r in range(args.rounds + 1):  # round 0 warms up; the order flips every round
        for name in ("ours", "plain")[:: 1 if r % 2 else -1]:
            net = make_net(args.arch, data.input_shape, args.width)
            t = time.process_time()
            if name == "ours":
                ours(args.arch, net, x, y, args.eps, lr, args.algorithm, args.epochs)
            else:
                gen = torch_generator(0, "bench", "plain")
                plain_loop(args.arch, net, x, y, args.eps, lr, args.algorithm, args.epochs, gen)
            if r:
                times[name].append((time.process_time() - t) / args.epochs)
    return times


def against_baseline(args) -> None:
    """Alternate child interpreters on the baseline's library and this checkout's."""
    here = Path(__file__).resolve()
    checkouts = {"before": Path(args.baseline).resolve(), "after": here.parents[1]}
    cmd = [sys.executable, str(here), "--json", "--rounds", "2", "--data-root", args.data_root]
    for key in ("arch", "algorithm", "n", "width", "eps", "epochs", "threads"):
        cmd += [f"--{key}", str(getattr(args, key))]
    times = {c: {"ours": [], "plain": []} for c in checkouts}
    for r in range(args.rounds):  # the order flips every round
        for label, root in list(checkouts.items())[:: 1 if r % 2 == 0 else -1]:
            path = os.pathsep.join([str(root / "src"), str(here.parent)])
            out = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": path}, check=True,
                                 capture_output=True, text=True).stdout  # fmt: skip
            for name, ts in json.loads(out.splitlines()[-1]).items():
                times[label][name] += ts
    med = {c: {k: statistics.median(v) for k, v in t.items()} for c, t in times.items()}
    for label, root in checkouts.items():
        m = med[label]
        print(f"{label} ({root}): ours {1e3 * m['ours']:.2f}, plain {1e3 * m['plain']:.2f} "
              f"ms/epoch (CPU; ours rounds {[f'{1e3 * t:.2f}' for t in times[label]['ours']]}); "
              f"ratio ours/plain = {m['ours'] / m['plain']:.3f}")  # fmt: skip
    print(f"ours before / after = {med['before']['ours'] / med['after']['ours']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-root", required=True, help="directory holding MNIST/raw")
    ap.add_argument("--arch", choices=("fc", "cnn"), default="fc")
    ap.add_argument("--algorithm", choices=("gd", "sd"), default="sd")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--baseline", help="another checkout: its library against this one's")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a child's output
    args = ap.parse_args()
    if args.baseline:
        print(f"{args.arch} width {args.width}, n={args.n}, {args.algorithm}, eps={args.eps}, "
              f"{args.epochs} epochs x {args.rounds} rounds per checkout, alternating; "
              f"matmul peak {matmul_peak():.0f} GFLOP/s")  # fmt: skip
        return against_baseline(args)
    torch.set_num_threads(args.threads)
    arrays, _ = make_dataset({**MNIST_2V7, "n_train": args.n}, 0, args.data_root)
    data = dataset_from_arrays(arrays)
    if args.json:
        return print(json.dumps(measure(args, data)))
    print(
        f"{args.arch} width {args.width}, n={args.n}, {args.algorithm}, eps={args.eps}, "
        f"{args.epochs} epochs x {args.rounds} rounds, {args.threads} thread(s); "
        f"matmul peak {matmul_peak():.0f} GFLOP/s"
    )
    times = measure(args, data)
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:>6}: {1e3 * med[k]:.2f} ms/epoch (CPU; rounds {[f'{1e3 * t:.2f}' for t in v]})")
    print(f"ratio ours/plain = {med['ours'] / med['plain']:.3f}")


if __name__ == "__main__":
    main()
