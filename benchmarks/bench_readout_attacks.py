"""Benchmark: a k-class model's attacks under every binary readout, per-readout jobs vs one job.

Setting (Study FA-IMAGES at CPU scale, ``config.yaml``): ``cnn_small`` trained with 10-class
supervision on MNIST parity (``adam_img``: Adam lr 1e-3, batch 128; ``--epochs`` epochs on
``--n-train`` images, the study trains 15 on 10,000), attacked on its first ``--points`` test
images at the study's MNIST radii with the study's attacks (``pgd_margin_img``: margin PGD,
its loss reads the readout; ``pgd_ce_img``: cross-entropy PGD on the fine label, its loss
does not), under the study's readouts (sum, log_odds, argmax). Paths, alternating
``--rounds`` times in this process (CPU-seconds of this process, one torch thread):

  * ``per readout`` (before): what the per-readout attack jobs computed, one
    ``evaluate_attacks`` per readout, each from the job's fresh generator;
  * ``one job`` (after): ``evaluate_attacks_readouts``, the margin PGD once per readout and
    the cross-entropy PGD once, judged under every readout, on one generator.

Prints CPU-seconds per path, the ratio before / after, and per readout the worst-case
robust accuracy of both at every radius: the cross-entropy attack's random starts and the
points it runs on change, so the numbers move within noise (the difference per radius is
printed; it is not asserted).

    python benchmarks/bench_readout_attacks.py --data-root DIR [--points 500] [--epochs 3]
        [--n-train 10000] [--rounds 2] [--cache FILE.pt]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import yaml
from _machine import matmul_peak

from ibrobust.attacks.suite import AttackContext, evaluate_attacks, evaluate_attacks_readouts
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.data.images import make_dataset
from ibrobust.models.image import build_image_model, image_config_from_dict
from ibrobust.models.readout import READOUTS, readout_for, with_readout
from ibrobust.seeding import torch_generator
from ibrobust.training.network import NetTrainConfig, net_train_fields, train_network

ROOT = Path(__file__).resolve().parents[1]


def study_setting() -> tuple[dict, dict, dict, dict, list[float]]:
    """(dataset, model, optimizer, attacks, radii) of fa_images on MNIST in config.yaml."""
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    st = cfg["studies"]["fa_images"]
    ds = {**cfg["datasets"]["mnist_parity"], "download": False}
    attacks = {name: cfg["attacks"][name] for name in st["attacks"]}
    model = {k: v for k, v in cfg["models"][st["models"][0]].items() if k != "kind"}
    radii = [float(r) for r in st["radii"]["mnist_parity"]]
    return ds, model, cfg["optimizers"][st["optimizers"][0]], attacks, radii


def trained_net(args, ds, model, optimizer):
    """cnn_small trained on the fine labels (cached in ``--cache`` when given)."""
    arrays, _ = make_dataset({**ds, "n_train": args.n_train}, 0, args.data_root)
    data = dataset_from_arrays(arrays)
    cfg = image_config_from_dict({"kind": "cnn", **model})
    readout = readout_for("multiclass", data.sign)
    net = build_image_model(
        cfg, data.input_shape, readout, torch_generator(0, "init"), data.train.x
    )
    if args.cache and Path(args.cache).exists():
        net.load_state_dict(torch.load(args.cache, weights_only=True))
        return net.eval(), data
    fields = net_train_fields({**optimizer, "epochs": args.epochs, "n_checkpoints": 0})
    tr = data.train
    train_network(net, tr.x, tr.y, tr.fine, "multiclass", NetTrainConfig(**fields), 0, "cpu")
    if args.cache:
        torch.save(net.state_dict(), args.cache)
    return net.eval(), data


class AttackClock:
    """CPU-seconds per attack name, from the suite's ``on_attack`` calls (summed over calls)."""

    def __init__(self):
        self.last, self.cpu = time.process_time(), {}

    def __call__(self, name: str) -> None:
        now = time.process_time()
        self.cpu[name] = self.cpu.get(name, 0.0) + now - self.last
        self.last = now


def per_readout(net, test, radii, attacks, ctx, clock):
    """One evaluate_attacks per readout, each from the job's fresh generator (before)."""
    out = {}
    for ro in READOUTS:
        gen = torch_generator(0, "attack", "main")
        view = with_readout(net, ro)
        out[ro], _ = evaluate_attacks(view, *test, radii, attacks, ctx, gen, on_attack=clock)
    return out


def one_job(net, test, radii, attacks, ctx, clock):
    gen = torch_generator(0, "attack", "main")
    tables, _ = evaluate_attacks_readouts(
        net, list(READOUTS), *test, radii, attacks, ctx, gen, on_attack=clock
    )
    return tables


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-root", required=True, help="directory holding MNIST/raw")
    ap.add_argument("--points", type=int, default=500)
    ap.add_argument("--n-train", type=int, default=10000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache", default=None, help="trained weights (written when missing)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ds, model, optimizer, attacks, radii = study_setting()
    t = time.process_time()
    net, data = trained_net(args, ds, model, optimizer)
    train_cpu = time.process_time() - t
    te = data.test.head(args.points)
    test = (te.x, te.y, te.fine)
    ctx = AttackContext(task="binary", box=data.box)
    with torch.no_grad():
        fine_acc = float((net(te.x).argmax(1) == te.fine).float().mean())
    print(
        f"cnn_small 10-class, {args.epochs} epochs on {args.n_train} MNIST images "
        f"({train_cpu:.0f} CPU-s; fine test acc {fine_acc:.3f}); {args.points} points, radii "
        f"{radii}; attacks {attacks}; readouts {list(READOUTS)}; {args.threads} thread(s); "
        f"matmul peak {matmul_peak():.0f} GFLOP/s"
    )
    paths = {"per readout": per_readout, "one job": one_job}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    per_attack: dict[str, list[dict[str, float]]] = {name: [] for name in paths}
    result = {}
    for r in range(args.rounds):  # alternate, in turns, so that load changes hit both
        for name, fn in list(paths.items())[:: 1 if r % 2 == 0 else -1]:
            clock = AttackClock()
            t = time.process_time()
            result[name] = fn(net, test, radii, attacks, ctx, clock)
            cpu[name].append(time.process_time() - t)
            per_attack[name].append(clock.cpu)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    for k, v in cpu.items():
        parts = {a: round(statistics.median(c[a] for c in per_attack[k]), 1) for a in attacks}
        print(
            f"{k:>12}: {med[k]:.1f} CPU-s (rounds {[round(t, 1) for t in v]}; per attack {parts})"
        )
    print(f"ratio per readout / one job = {med['per readout'] / med['one job']:.2f}")
    print("\nworst-case robust accuracy per readout (before | after | after - before):")
    print("| readout | " + " | ".join(f"{e:g}" for e in radii) + " |")
    print("|---|" + "---:|" * len(radii))
    for ro in READOUTS:
        rows = []
        for name in paths:
            t = result[name][ro]
            rows.append(t[t.attack == "worst"].sort_values("eps").robust_acc.to_numpy())
        cells = [f"{a:.3f} / {b:.3f} / {b - a:+.3f}" for a, b in zip(*rows, strict=True)]
        print(f"| {ro} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
