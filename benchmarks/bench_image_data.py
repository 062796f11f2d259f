"""Time to prepare the FA-IMAGES datasets from real files (ibrobust.data.images).

Prints, per case, the seconds to read the source (``load_source``: for an imagefolder the
file listing only), to draw and decode the subsets (``subset_images``), the per-class
counts and the checksum. Cases: MNIST parity 10k/2k (torchvision layout under
``--data-root``), CIFAR-10 halves 4k/1k from an ``.npz`` (``--npz``) and from an
ImageFolder tree (``--imagefolder``); a case whose path is not given is skipped.

Usage: .venv/bin/python benchmarks/bench_image_data.py --data-root /path/with/MNIST
[--npz cifar10.npz] [--imagefolder /path/to/cifar10-jpeg] [--seed 0] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

import torchvision  # noqa: F401  (imported here so that its ~1 s is not timed)

from ibrobust.data.images import ImageDataConfig, load_source, subset_images


def run(name: str, cfg: ImageDataConfig, data_root: str, seed: int) -> None:
    t0 = time.perf_counter()
    raw = load_source(cfg, data_root)
    t1 = time.perf_counter()
    data = subset_images(cfg, raw, seed)
    t2 = time.perf_counter()
    counts = data.class_counts()
    print(
        f"{name:<22} load {t1 - t0:6.2f} s  subset {t2 - t1:6.2f} s  total {t2 - t0:6.2f} s  "
        f"source {len(raw.train)}/{len(raw.test)}  x {tuple(data.train.x.shape)}  "
        f"sha256 {data.checksum[:12]}"
    )
    print(f"{'':<22} train per class {counts['train'].tolist()}")
    print(f"{'':<22} test  per class {counts['test'].tolist()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", required=True)
    ap.add_argument("--npz")
    ap.add_argument("--imagefolder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=2, help="the first run reads a cold cache")
    args = ap.parse_args()

    cases = [
        (
            "mnist parity 10k/2k",
            ImageDataConfig("mnist", split="parity", n_train=10000, n_test=2000),
        )
    ]
    cifar = dict(split="halves", n_train=4000, n_test=1000)
    if args.npz:
        cases.append(("cifar10 npz halves", ImageDataConfig("npz", path=args.npz, **cifar)))
    if args.imagefolder:
        cfg = ImageDataConfig("imagefolder", path=args.imagefolder, **cifar)
        cases.append(("cifar10 folder halves", cfg))
    for r in range(args.repeats):
        print(f"-- run {r + 1}")
        for name, cfg in cases:
            run(name, cfg, args.data_root, args.seed)


if __name__ == "__main__":
    main()
