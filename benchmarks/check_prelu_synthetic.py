"""Manual check of a CPU-scale Study PRELU synthetic configuration (prints, never asserts).

Trains pReLU nets on the orthogonal-cluster data (D, K=10 unit standard-basis centres,
6 positive / 4 negative, noise alpha/sqrt(D)) with SGD lr 0.2, batch 100, exponential
loss, init std 1e-7 -- every (alpha, seed) of one p as one ``train_prelu_sweep`` -- then
reports per p and alpha (mean over seeds): clean test accuracy, robust accuracy under l2
PGD on the binary margin (``ibrobust.attacks.pgd`` + ``neg_binary_margin``) at a grid of
radii, the neuron alignment summary, and the scale-invariant distances to F and F^(p)
(on points uniform on the unit sphere of the centres' span). Reference radii:
1/sqrt(K) = 0.316 (ReLU) and sqrt(2)/2 = 0.707 (pReLU, p > 2).

    python benchmarks/check_prelu_synthetic.py --h 200 --n 2000 --epochs 100 \
        --alphas 0.05 0.2 --seeds 0 1 --ps 1 2 3 4 [--matmul bf16]
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from ibrobust.analysis.prelu import (
    alignment_summary,
    ideal_distances,
    neuron_alignment,
    span_sphere_points,
)
from ibrobust.attacks.losses import binary_correct, neg_binary_margin
from ibrobust.attacks.pgd import PGDConfig, pgd
from ibrobust.data.clusters import ClusterDataConfig, make_cluster_data
from ibrobust.models.prelu import PreluConfig, build_prelu, init_prelu, prelu_readout
from ibrobust.seeding import torch_generator
from ibrobust.studies.prelu.radii import PRELU_ROBUST_RADIUS, relu_nonrobust_radius
from ibrobust.training.prelu import PreluTrainConfig, train_prelu_sweep

K, K_POS = 10, 6


def data_for(d: int, n: int, n_test: int, alpha: float, seed: int):
    """The paper's data. ClusterDataConfig only accepts a balanced J+ (k/2 clusters), so
    draw with the default split and relabel y from the fine label (x, fine unaffected)."""
    cfg = ClusterDataConfig(
        d=d,
        k=K,
        n_train=n,
        n_test=n_test,
        sigma=alpha / math.sqrt(d),
        basis="standard",
        mean_norm=1.0,
    )
    data = make_cluster_data(cfg, seed)
    sign = torch.tensor([1.0] * K_POS + [-1.0] * (K - K_POS))
    return data, sign, sign[data.train.fine], sign[data.test.fine]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--h", type=int, default=200)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.05, 0.2])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--ps", type=float, nargs="+", default=[1.0, 3.0])
    ap.add_argument(
        "--radii",
        type=float,
        nargs="+",
        default=[0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.2, 1.5],
    )
    ap.add_argument("--pgd-steps", type=int, default=50)
    ap.add_argument("--pgd-restarts", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--matmul",
        choices=["fp32", "bf16"],
        default="fp32",
        help="operand precision of the training's two big products (PreluTrainConfig.matmul)",
    )
    ap.add_argument(
        "--log-every", type=int, default=0, help="print the running loss every k epochs"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    runs = [(a, s) for a in args.alphas for s in args.seeds]
    datasets = {(a, s): data_for(args.d, args.n, args.n_test, a, s) for a, s in runs}
    x = torch.stack([datasets[r][0].train.x for r in runs])  # (S, n, D)
    y = torch.stack([datasets[r][2] for r in runs])  # (S, n)
    tcfg = PreluTrainConfig(lr=0.2, batch_size=100, epochs=args.epochs, matmul=args.matmul)
    pgd_cfg = PGDConfig(norm="l2", steps=args.pgd_steps, restarts=args.pgd_restarts, step_size=0.1)
    print(
        f"matmul={args.matmul} D={args.d} h={args.h} n={args.n} epochs={args.epochs} ({args.epochs * math.ceil(args.n / 100)} steps) "
        f"alphas={args.alphas} seeds={args.seeds}; radii={args.radii}; "
        f"reference radii {relu_nonrobust_radius(K):.3f} (ReLU), {PRELU_ROBUST_RADIUS:.3f} (pReLU)"
    )
    total_train = total_eval = total_cpu = 0.0
    for p in args.ps:
        mcfg = PreluConfig(width=args.h, p=p, init_std=1e-7)
        nets = [
            build_prelu(init_prelu(args.d, 1, mcfg, seed=s), prelu_readout("binary"), mcfg)
            for _, s in runs
        ]

        def log(rec, p=p):
            if args.log_every and rec["epoch"] % args.log_every == 0:
                a, s = runs[rec["run"]]
                print(
                    f"  p={p:g} alpha={a} seed={s} epoch {rec['epoch']}: loss {rec['loss']:.3e} acc {rec['acc']:.3f}"
                )

        t0, c0 = time.perf_counter(), time.process_time()
        results = train_prelu_sweep(nets, x, y, tcfg, [s for _, s in runs], on_epoch=log)
        t_train, c_train = time.perf_counter() - t0, time.process_time() - c0
        total_train += t_train
        total_cpu += c_train
        t0, c0 = time.perf_counter(), time.process_time()
        table: dict[float, list] = {a: [] for a in args.alphas}
        for (a, s), res in zip(runs, results, strict=True):
            data, sign, _, y_test = datasets[(a, s)]
            model = res.model
            xt = data.test.x
            adv = pgd(
                model,
                xt,
                y_test,
                data.test.fine,
                args.radii,
                neg_binary_margin,
                pgd_cfg,
                torch_generator(s, "prelu-check", "pgd"),
            )
            with torch.no_grad():
                rob = [
                    float(binary_correct(model, adv[i], y_test).float().mean())
                    for i in range(len(args.radii))
                ]
            summ = alignment_summary(
                neuron_alignment(model.weight.detach(), model.out_weight.detach(), data.means, sign)
            )
            probes = span_sphere_points(
                data.means, 2000, torch_generator(s, "prelu-check", "probes")
            )
            dist = ideal_distances(model, probes, data.means, sign, p)
            table[a].append((res.history[-1]["loss"], rob, summ, dist))
        t_eval, c_eval = time.perf_counter() - t0, time.process_time() - c0
        total_eval += t_eval
        total_cpu += c_eval
        print(
            f"\np={p:g}: training {t_train:.1f} s wall ({c_train:.1f} s CPU) for {len(runs)} runs "
            f"(one sweep), evaluation {t_eval:.1f} s wall ({c_eval:.1f} s CPU)"
        )
        print(
            f"{'alpha':>6}{'loss':>10}{'n_act':>7}{'single':>8}{'avg':>6}{'cos':>6}{'d(F)':>7}{'d(Fp)':>7}  robust acc at radii"
        )
        for a in args.alphas:
            rows = table[a]
            loss = sum(r[0] for r in rows) / len(rows)
            rob = [sum(r[1][i] for r in rows) / len(rows) for i in range(len(args.radii))]
            mean = lambda key, rows=rows: sum(r[2][key] for r in rows) / len(rows)  # noqa: E731
            dF = sum(r[3]["dist_F"] for r in rows) / len(rows)
            dFp = sum(r[3]["dist_Fp"] for r in rows) / len(rows)
            print(
                f"{a:>6g}{loss:>10.2e}{mean('n_active'):>7.1f}{mean('frac_single'):>8.2f}{mean('frac_average'):>6.2f}"
                f"{mean('mean_best_cos'):>6.2f}{dF:>7.3f}{dFp:>7.3f}  "
                + " ".join(f"{v:.2f}" for v in rob)
            )
    print(
        f"\ntotal: training {total_train:.1f} s wall, evaluation {total_eval:.1f} s wall, "
        f"{total_cpu:.1f} s CPU (threads={args.threads})"
    )


if __name__ == "__main__":
    main()
