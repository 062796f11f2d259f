"""Manual check of a CPU-scale Study PRELU MNIST configuration (prints, never asserts).

The official MNIST protocol (``prelu_mnist.py``, ``load_mnist_datasets.py``): pixels in
[0, 1] flattened to D=784; train = MNIST training images 0..49999, test = training
images 50000..59999 (``mnist.pkl.gz``'s validation split); centre = the mean training
image; pReLU net of width 500 with input normalisation (the official forward default),
Kaiming init, output bias; Adam lr 1e-3, batch 1000, 51 epochs, cross-entropy on y mod 2
(2-class) or y (10-class). This script trains on the first ``--n`` training images for
``--epochs`` epochs and reports clean test accuracy per p and the wall time, plus an l2
PGD-CE robust accuracy at ``--l2-eps`` on ``--n-attack`` test images (a trend check, not
the paper's AutoAttack APGD-CE).

    python benchmarks/check_prelu_mnist.py --root /path/with/MNIST/raw --n 10000 --epochs 15
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torchvision.datasets import MNIST

from ibrobust.models.prelu import PreluConfig, build_prelu, init_prelu
from ibrobust.training.prelu import PreluTrainConfig, train_prelu


def load(root: str) -> tuple[torch.Tensor, torch.Tensor]:
    ds = MNIST(root=root, train=True, download=False)
    return ds.data.reshape(-1, 784).float() / 255.0, ds.targets.clone()


def pgd_ce_l2(model, x, y, eps, steps=50, step=0.1):
    """Plain l2 PGD on the cross-entropy from a zero start, box [0, 1] (trend check only)."""
    delta = torch.zeros_like(x)
    for _ in range(steps):
        delta.requires_grad_(True)
        loss = F.cross_entropy(model(x + delta), y)
        (g,) = torch.autograd.grad(loss, delta)
        with torch.no_grad():
            delta = delta + step * eps * g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)
            delta = delta * torch.clamp(
                eps / delta.norm(dim=1, keepdim=True).clamp_min(1e-12), max=1
            )
            delta = (x + delta).clamp(0, 1) - x
    with torch.no_grad():
        return float((model(x + delta).argmax(1) == y).float().mean())


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--root", required=True, help="directory holding MNIST/raw")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--width", type=int, default=500)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--classes", type=int, nargs="+", default=[2, 10])
    ap.add_argument("--ps", type=float, nargs="+", default=[1.0, 2.0, 3.0, 4.0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--l2-eps", type=float, default=1.0)
    ap.add_argument("--n-attack", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    x_all, digit = load(args.root)
    x_tr, d_tr = x_all[: args.n], digit[: args.n]
    x_te, d_te = x_all[50000:60000], digit[50000:60000]
    center = x_all[:50000].mean(0)  # the official centre: mean of the 50000 training images
    tcfg = PreluTrainConfig(
        lr=1e-3, batch_size=args.batch, epochs=args.epochs, loss="cross_entropy", optimizer="adam"
    )
    print(
        f"MNIST n={args.n} epochs={args.epochs} width={args.width} batch={args.batch} Adam lr 1e-3, seed {args.seed}"
    )
    print(
        f"{'classes':>7}{'p':>4}{'wall s':>9}{'CPU s':>8}{'train acc':>10}{'test acc':>9}"
        f"{'l2 PGD-CE':>10}"
    )
    total = total_cpu = 0.0
    for c in args.classes:
        for p in args.ps:
            mcfg = PreluConfig(
                width=args.width, p=p, init="kaiming", normalize_input=True, out_bias=True
            )
            readout = torch.tensor([1.0, -1.0] * (c // 2)) if c % 2 == 0 else torch.ones(c)
            net = build_prelu(
                init_prelu(784, c, mcfg, seed=args.seed), readout, mcfg, center=center
            )
            t0, c0 = time.perf_counter(), time.process_time()
            res = train_prelu(net, x_tr, d_tr % c, tcfg, seed=args.seed)
            sec, cpu = time.perf_counter() - t0, time.process_time() - c0
            total += sec
            total_cpu += cpu
            model = res.model
            with torch.no_grad():
                acc = float((model(x_te).argmax(1) == d_te % c).float().mean())
            rob = pgd_ce_l2(model, x_te[: args.n_attack], d_te[: args.n_attack] % c, args.l2_eps)
            print(
                f"{c:>7}{p:>4g}{sec:>9.1f}{cpu:>8.1f}{res.history[-1]['acc']:>10.3f}{acc:>9.3f}"
                f"{rob:>10.3f}"
            )
    print(f"total training time {total:.1f} s wall, {total_cpu:.1f} s CPU (threads={args.threads})")


if __name__ == "__main__":
    main()
