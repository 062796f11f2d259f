"""CPU vs CUDA for the three kinds of work the config key ``device`` moves: one training epoch
(the ``train`` job's network path: a small CNN, SGD, minibatches of 128), one PGD batch (the
``attack`` job's evaluation: l_inf PGD, 20 steps, 2 restarts, every point at one radius) and
one MARGIN epoch (``margin_train``: the homogeneous CNN in float64 with the loss-based rate).

Each measurement runs ``--reps`` times with cpu and cuda alternating (cpu, cuda, cpu, ...), so
a drifting machine load hits both sides alike; the median seconds of each side and their
ratio cpu / cuda are printed. Wall seconds (CUDA synchronised before each clock read) and, on
the CPU side, CPU seconds (``time.process_time``). Where ``torch.cuda.is_available()`` is
False it says so and runs the CPU side only. Synthetic images (uniform in [0, 1]) stand in
for the data: the work per step does not depend on the pixel values.

    python benchmarks/bench_device.py --n 1024 --reps 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from _machine import matmul_peak

from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.models.homogeneous_cnn import HomogeneousCNNConfig, build_homogeneous_cnn
from ibrobust.seeding import torch_generator
from ibrobust.stages.networks import fit
from ibrobust.stages.robustness import evaluate_robustness
from ibrobust.training.margin import MarginTrainConfig, train_margin

CNN = {"kind": "cnn", "channels": [16, 32], "hidden": [128], "kernel": 5}
SGD = {"kind": "sgd", "lr": 0.01, "epochs": 1, "batch_size": 128}
PGD = {"kind": "pgd", "loss": "ce", "norm": "linf", "steps": 20, "restarts": 2, "batch_size": 1000}


def images(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """A dataset file's arrays: n train and n test (3, 32, 32) uint8 images, 10 classes."""
    rng = np.random.default_rng(seed)
    fine = rng.integers(0, 10, size=(2, n))
    sign = np.where(np.arange(10) < 5, 1.0, -1.0)
    arrays = {"sign": sign}
    for i, split in enumerate(("train", "test")):
        arrays[f"{split}_x"] = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
        arrays[f"{split}_fine"] = fine[i]
        arrays[f"{split}_y"] = sign[fine[i]]
    return arrays


def clock(fn, dev: str) -> tuple[float, float]:
    """(wall s, CPU s) of fn(dev); CUDA synchronised before each read."""
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    sync()
    w, c = time.perf_counter(), time.process_time()
    fn(dev)
    sync()
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=1024, help="training images (and PGD points)")
    ap.add_argument("--margin-n", type=int, default=256, help="MARGIN training images")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), fp32 matmul {matmul_peak():.0f} GFLOP/s"
    )
    if cuda:
        print(f"CUDA: {torch.cuda.get_device_name(0)}")
    else:
        print("CUDA: not available here (torch.cuda.is_available() is False): CPU side only")
    devices = ["cpu", "cuda"] if cuda else ["cpu"]

    data = dataset_from_arrays(images(args.n))
    state = fit(CNN, SGD, data, "multiclass", 0, device="cpu").state  # the attacked model
    x_m = data.train.x[: args.margin_n].double()
    y_m = data.train.fine[: args.margin_n]
    margin_cfg = MarginTrainConfig(epochs=1, batch_size=64)

    def train_epoch(dev):
        fit(CNN, SGD, data, "multiclass", 0, device=dev)

    def pgd_batch(dev):
        gen = torch_generator(0, "bench", "pgd")
        evaluate_robustness(state, data, {"pgd": PGD}, [8 / 255], args.n, "binary", ["sum"],
                            gen, device=dev)  # fmt: skip

    def margin_epoch(dev):
        net = build_homogeneous_cnn(
            (3, 32, 32), 10, HomogeneousCNNConfig(), seed=0, dtype=torch.float64
        )
        train_margin(net, x_m, y_m, margin_cfg, seed=0, device=dev)

    for name, fn in (("training epoch", train_epoch), ("PGD batch", pgd_batch),
                     ("MARGIN epoch", margin_epoch)):  # fmt: skip
        fn(devices[-1])  # warm-up (CUDA context, kernels, allocator)
        times: dict[str, list[tuple[float, float]]] = {d: [] for d in devices}
        for _ in range(args.reps):
            for dev in devices:  # alternating
                times[dev].append(clock(fn, dev))
        wall = {d: statistics.median(t[0] for t in times[d]) for d in devices}
        cpu_s = statistics.median(t[1] for t in times["cpu"])
        line = f"{name:15s} cpu {wall['cpu']:8.3f} s wall ({cpu_s:.3f} CPU-s)"
        if cuda:
            line += (
                f"  cuda {wall['cuda']:8.3f} s  ratio cpu/cuda {wall['cpu'] / wall['cuda']:.1f}x"
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
