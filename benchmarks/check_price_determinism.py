"""Is Study PRICE-LIN bit-reproducible across thread counts and CPU code paths? (manual check)

Runs the library pieces of one PRICE-LIN (regime, n) exactly as the workflow's jobs do
(``sample_train_draws`` -> ``draw_margins`` (HiGHS LP) -> ``train_problems`` per algorithm ->
``metrics_table``), once per *variant*, each in a fresh process, and prints how far every
variant is from the first: the LP margins, the trained weights and the robust gap per eps
fraction (points, mean over draws: the numbers of ``summary.md``).

Variants: torch threads 1 and 2 (the config key ``threads``), and threads 1 with the x86
kernels capped at AVX2 (``ATEN_CPU_CAPABILITY=avx2``, ``MKL_CBWR=AVX2``,
``ONEDNN_MAX_CPU_ISA=AVX2``), which is what an AVX2-only machine (or another MKL code path)
computes. Nothing is asserted; it prints figures.

Usage: .venv/bin/python benchmarks/check_price_determinism.py [--regime teacher_w4_x512]
[--n 16] [--algorithms lin_gd lin_cd] [--configfile config.yaml]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
VARIANTS = {
    "threads=1": (1, {}),
    "threads=2": (2, {}),
    "threads=1, AVX2 kernels": (1, AVX2),
    "threads=2, AVX2 kernels": (2, AVX2),
}


def worker(args: argparse.Namespace) -> None:
    """One variant: train and write the margins, weights and gaps to ``args.out`` (npz)."""
    import torch
    import yaml

    from ibrobust.studies.price_linear.experiment import (
        draw_margins,
        erm_config,
        metrics_table,
        problem_grid,
        sample_test_set,
        sample_train_draws,
        teacher_config,
        train_problems,
    )

    torch.set_num_threads(args.threads)
    cfg = yaml.safe_load(Path(args.configfile).read_text())
    study = cfg["studies"]["price_linear"]
    dataset = cfg["datasets"][args.regime]
    teacher = teacher_config(dataset, args.n)
    x, y = sample_train_draws(teacher, study["seed"], study["draws"])
    _, x_test, y_test = sample_test_set(teacher_config(dataset), study["seed"])
    gamma, _ = draw_margins(x, y)
    grid = problem_grid(study["draws"], gamma, study["eps_fractions"])
    out = {"gamma": gamma, "capability": np.array(torch.backends.cpu.get_cpu_capability())}
    for name in args.algorithms:
        result = train_problems(x, y, grid, erm_config(cfg["optimizers"][name], study["stopping"]))
        table = metrics_table(result, grid, x, y, x_test, y_test)
        out[f"{name}.w"] = result.w.numpy()
        out[f"{name}.gap"] = 100 * table.groupby("eps_fraction").robust_gap.mean().to_numpy()
        out[f"{name}.iters"] = result.iters.numpy()
    out["eps_fractions"] = np.asarray(study["eps_fractions"])
    np.savez(args.out, **out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regime", default="teacher_w4_x512")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--algorithms", nargs="+", default=["lin_gd", "lin_cd"])
    ap.add_argument("--configfile", default=str(REPO / "config.yaml"))
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)  # set: run one variant (worker)
    args = ap.parse_args()
    if args.out:
        worker(args)
        return

    import tempfile

    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, (threads, env) in VARIANTS.items():
            out = Path(tmp) / f"{len(runs)}.npz"
            cmd = [sys.executable, __file__, "--regime", args.regime, "--n", str(args.n)]
            cmd += ["--algorithms", *args.algorithms, "--configfile", args.configfile]
            cmd += ["--threads", str(threads), "--out", str(out)]
            subprocess.run(cmd, check=True, env={**os.environ, **env})
            runs[label] = dict(np.load(out))
    ref_label, ref = next(iter(runs.items()))
    print(f"PRICE-LIN {args.regime} n={args.n}, reference: {ref_label} ({ref['capability']})")
    print(f"eps fractions: {ref['eps_fractions'].tolist()}")
    for label, run in runs.items():
        print(f"\n== {label} (torch CPU capability {run['capability']})")
        dg = np.abs(run["gamma"] - ref["gamma"]).max()
        print(
            f"  LP margins gamma*: identical={np.array_equal(run['gamma'], ref['gamma'])}"
            f" max|diff|={dg:.3g}"
        )
        for name in args.algorithms:
            w, w0 = run[f"{name}.w"], ref[f"{name}.w"]
            same = np.array_equal(w, w0)
            rel = np.abs(w - w0).max() / np.abs(w0).max()
            iters = int(np.abs(run[f"{name}.iters"] - ref[f"{name}.iters"]).max())
            gap = np.round(run[f"{name}.gap"], 2).tolist()
            dgap = np.abs(run[f"{name}.gap"] - ref[f"{name}.gap"]).max()
            print(
                f"  {name}: weights identical={same} max rel diff={rel:.3g},"
                f" max |iters diff|={iters}; robust gap (points) {gap},"
                f" max |diff| {dgap:.2f}"
            )


if __name__ == "__main__":
    main()
