"""Study MARGIN at scale (issue 26): how far the loss-based schedule gets per CPU second.

For each cell (n_train, batch, dtype, alpha(0)) this trains the study's CPU-scale net
(``margin_cnn_small``: homogeneous_cnn, channels [8, 16], kernels [5, 3], hidden [128]) on
the seeded, class-stratified MNIST subset through the library calls the workflow's
``margin_train`` job makes (``make_dataset`` -> ``run_data`` -> ``train_config`` ->
``build_net`` -> ``train_margin``, test accuracy on ``--n-test`` images after every
accepted epoch as the job does), until log10 L < -300 or a budget of CPU seconds
(``time.process_time``, one thread; checked after each accepted epoch). Checkpoints at
the paper's thresholds (models 1-4: log10 L = -10, -15, -20, -120) and -300.

Per cell it appends one JSON record to ``OUT/cells.jsonl`` (and writes the per-epoch
history and the checkpoints beside it); ``--table`` turns the records into the markdown
tables of docs/results.md (Study MARGIN at scale): log10 L reached, accepted / redone epochs,
CPU s in all and per attempted epoch, and per checkpoint the epoch, the CPU s to reach it
and the normalized margin q_min / rho^4 there, train / test accuracy at the end, and for a
cell that stopped at its budget the CPU s the last quarter's rate projects to -120 / -300.

``--robustness`` times the study's robustness job (``checkpoint_robustness``: FAB l2 and
l_inf with ``fab_iter`` iterations, l2 PGD bisection on the first ``bisection_points``,
the certificate) per checkpoint of one trained cell, on its first ``attack_points`` train
and test points. ``--model margin_cnn --max-epochs 3`` prices an epoch of the paper's net.

Only the training loss chooses alpha(0) (``--alphas`` on one cell); no test or robustness
number does. Commands (run from the repository root, one heavy process at a time):

    B="python benchmarks/margin_scale.py --root ../shared/data --out results/benchmarks/margin_scale"
    $B --n-train 20 200 1000 5000 --batch full 100 --dtype float64 float32 --budget 600
    $B --n-train 1000 --batch 100 --dtype float32 --alphas 0.001 0.01 0.1 1 --budget 120
    $B --n-train 1000 --batch 100 --dtype float32 --model margin_cnn --max-epochs 3
    $B --robustness n1000_b100_float32_a0.01 --attack-points 200
    $B --table
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import pandas as pd
import torch

from ibrobust.analysis.margin import eval_logits
from ibrobust.data.registry import make_dataset
from ibrobust.studies.margin.experiment import (
    MarginRobustConfig,
    build_net,
    checkpoint_robustness,
    load_checkpoints,
    run_data,
    train_config,
)
from ibrobust.training.margin import train_margin

THRESHOLDS = (-10.0, -15.0, -20.0, -120.0, -300.0)  # the paper's models 1-4, and -300
PAPER = {  # Lyu & Li's Table (MNIST, full CNN, SGD batch 100): epoch, log10 L, normalized margin
    -10.0: (38, -10.04, 5.65e-5),
    -15.0: (75, -15.12, 9.50e-5),
    -20.0: (107, -20.07, 1.30e-4),
    -120.0: (935, -120.01, 4.61e-4),
}
MODELS = {  # config.yaml's entries
    "margin_cnn_small": {
        "kind": "homogeneous_cnn",
        "channels": [8, 16],
        "kernels": [5, 3],
        "hidden": [128],
    },
    "margin_cnn": {
        "kind": "homogeneous_cnn",
        "channels": [32, 64],
        "kernels": [5, 3],
        "hidden": [1024],
    },
}
SUPERVISION = "multiclass"  # the paper's 10 digits


def mnist_run_data(root: str, n_train: int, n_test: int, seed: int):
    """The study's dataset entry (``margin_mnist`` with these sizes) as the training job reads it."""
    spec = dict(kind="image", source="mnist", split="parity", n_train=n_train, n_test=n_test)
    arrays, _ = make_dataset(spec, seed, root)
    return run_data(arrays, SUPERVISION)


def cell_key(n: int, batch: str, dtype: str, alpha: float, model: str) -> str:
    tail = "" if model == "margin_cnn_small" else f"_{model}"
    return f"n{n}_b{batch}_{dtype}_a{alpha:g}{tail}"


def train_cell(
    data,
    model: str,
    batch: str,
    dtype: str,
    alpha: float,
    budget: float,
    max_epochs: int,
    seed: int,
    stop: float | None,
) -> tuple[dict, object, pd.DataFrame]:
    """Train one cell; returns its record, the training result and the history."""
    training = dict(
        epochs=max_epochs,
        batch_size=None if batch == "full" else int(batch),
        alpha=alpha,
        checkpoint_log10_losses=list(THRESHOLDS),
        stop_log10_loss=stop,
        max_consecutive_rollbacks=60,
        dtype=dtype,
    )
    cfg = train_config(training, len(data.x))
    net = build_net(MODELS[model], data, SUPERVISION, seed, dtype=cfg.torch_dtype)
    c0 = time.process_time()
    ck_cpu: dict[str, float] = {}

    def on_checkpoint(ck) -> None:
        ck_cpu[ck.name] = time.process_time() - c0

    res = train_margin(
        net,
        data.x,
        data.y,
        cfg,
        seed,
        x_test=data.x_test,
        y_test=data.y_test,
        on_checkpoint=on_checkpoint,
        should_stop=lambda row: time.process_time() - c0 > budget,
    )
    cpu = time.process_time() - c0
    hist = pd.DataFrame(res.history)
    t0 = time.process_time()  # what the per-epoch test accuracy costs (one pass over the test set)
    eval_logits(net, data.x_test.to(cfg.torch_dtype), cfg.eval_batch_size)
    test_eval = time.process_time() - t0
    by_epoch = hist.set_index("epoch")
    checkpoints = []
    for ck in res.checkpoints:
        row = by_epoch.loc[ck.epoch]
        checkpoints.append(
            dict(
                name=ck.name,
                threshold=ck.threshold,
                epoch=ck.epoch,
                log10_loss=ck.log10_loss,
                cpu=ck_cpu[ck.name],
                redone=int(row["rollbacks"]),
                normalized_margin=float(row["normalized_margin"]),
                smoothed_normalized_margin=float(row["smoothed_normalized_margin"]),
                train_acc=float(row["train_acc"]),
                test_acc=float(row.get("test_acc", math.nan)),
            )
        )
    last = res.history[-1]
    epochs = int(last["epoch"])
    rec = dict(
        n_train=len(data.x),
        n_test=len(data.x_test),
        batch=batch,
        batch_size=cfg.batch_size,
        dtype=dtype,
        alpha0=alpha,
        seed=seed,
        budget=budget,
        log10_loss=float(last["log10_train_loss"]),
        epochs=epochs,
        redone=res.rollbacks,
        cpu=cpu,
        cpu_per_attempt=cpu / max(1, epochs + res.rollbacks),
        test_eval_cpu_per_epoch=test_eval,
        stop_reason="budget" if res.stop_reason == "should_stop" else res.stop_reason,
        train_acc=float(last["train_acc"]),
        test_acc=float(last.get("test_acc", math.nan)),
        alpha_end=float(last.get("alpha", alpha)),
        normalized_margin_end=float(last["normalized_margin"]),
        checkpoints=checkpoints,
        **late_rate(hist, cpu),
    )
    return rec, res, hist


def late_rate(hist: pd.DataFrame, cpu: float) -> dict:
    """Decades of loss per accepted epoch and per CPU s over the last quarter of the run
    (CPU s apportioned by attempted epochs), and what that rate projects to -120 and -300."""
    if len(hist) < 9:
        return {}
    h = hist.iloc[-(len(hist) // 4) - 1 :]
    attempts_all = hist["epoch"].iloc[-1] + hist["rollbacks"].iloc[-1]
    d_att = (h["epoch"].iloc[-1] + h["rollbacks"].iloc[-1]) - (
        h["epoch"].iloc[0] + h["rollbacks"].iloc[0]
    )
    d_ep = h["epoch"].iloc[-1] - h["epoch"].iloc[0]
    d_dec = h["log10_train_loss"].iloc[0] - h["log10_train_loss"].iloc[-1]  # decades gained
    cpu_late = cpu * d_att / max(1, attempts_all)
    out = dict(late_decades_per_epoch=d_dec / d_ep, late_decades_per_cpu=d_dec / cpu_late)
    now = float(hist["log10_train_loss"].iloc[-1])
    for target in (-120.0, -300.0):
        gap = now - target
        if gap > 0 and d_dec > 0:
            out[f"projected_cpu_{-int(target)}"] = cpu + gap / out["late_decades_per_cpu"]
    return out


def time_robustness(
    out: Path, key: str, root: str, cfg: MarginRobustConfig, dtype: str = "float64"
) -> dict:
    """CPU s of the robustness job's library call per checkpoint of a trained cell. The job
    loads every checkpoint into a float64 net; ``dtype`` float32 times the same call on
    float32 copies (what a robustness dtype setting would cost; not in the workflow)."""
    rec = next(r for r in read_records(out) if cell_key_of(r) == key)
    data = mnist_run_data(root, rec["n_train"], rec["n_test"], rec["seed"])
    saved = torch.load(out / f"{key}.checkpoints.pt", weights_only=False)
    nets = load_checkpoints(
        saved, MODELS[rec.get("model", "margin_cnn_small")], data, SUPERVISION, rec["seed"]
    )
    nets = {k: v.to(getattr(torch, dtype)) for k, v in nets.items()}
    per = {}
    frames = []
    for name, net in nets.items():
        c0 = time.process_time()
        df = checkpoint_robustness({name: net}, data, cfg, rec["seed"])
        per[name] = time.process_time() - c0
        frames.append(df)
        print(f"{key} {name}: {per[name]:.1f} CPU s", flush=True)
    pts = pd.concat(frames, ignore_index=True)
    pts.to_csv(out / f"{key}.points_{cfg.attack_points}_{dtype}.csv", index=False)
    med = pts.groupby(["checkpoint", "split"], sort=False)[["distance_l2", "distance_linf"]]
    return dict(
        cell=key,
        dtype=dtype,
        attack_points=cfg.attack_points,
        bisection_points=cfg.bisection_points,
        fab_iter=cfg.fab_iter,
        cpu_per_checkpoint=per,
        cpu=sum(per.values()),
        median=med.median().round(4).reset_index().to_dict("records"),
    )


def cell_key_of(r: dict) -> str:
    return cell_key(
        r["n_train"], r["batch"], r["dtype"], r["alpha0"], r.get("model", "margin_cnn_small")
    )


def read_records(out: Path, name: str = "cells.jsonl") -> list[dict]:
    path = out / name
    return (
        [json.loads(s) for s in path.read_text().splitlines() if s.strip()] if path.exists() else []
    )


def _fmt_ck(c: dict | None) -> str:
    if c is None:
        return "-"
    return f"{c['epoch']} · {c['cpu']:.0f} s · {c['normalized_margin']:.3g}"


def markdown(records: list[dict]) -> str:
    """The summary table and the checkpoint table (one row per cell, last record wins)."""
    cells = {cell_key_of(r): r for r in records}
    rows = sorted(
        cells.values(),
        key=lambda r: (
            r.get("model", ""),
            r["n_train"],
            r["batch"] != "full",
            r["dtype"],
            r["alpha0"],
        ),
    )
    head = (
        "| n_train | batch | dtype | alpha(0) | log10 L reached | epochs (redone) | CPU s "
        "(per attempt) | stop | train / test acc | late decades / epoch | projected CPU s to "
        "-120 / -300 |"
    )
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        proj = " / ".join(
            f"{r[k]:.0f}" if k in r else ("reached" if r["log10_loss"] < -t else "-")
            for k, t in (("projected_cpu_120", 120), ("projected_cpu_300", 300))
        )
        name = (
            r["batch"]
            if r.get("model", "margin_cnn_small") == "margin_cnn_small"
            else f"{r['batch']} ({r['model']})"
        )
        lines.append(
            f"| {r['n_train']} | {name} | {r['dtype']} | {r['alpha0']:g} | {r['log10_loss']:.2f} "
            f"| {r['epochs']} ({r['redone']}) | {r['cpu']:.0f} ({r['cpu_per_attempt']:.3f}) "
            f"| {r['stop_reason']} | {r['train_acc']:.3f} / {r['test_acc']:.3f} "
            f"| {r.get('late_decades_per_epoch', math.nan):.3f} | {proj} |"
        )
    lines += [
        "",
        "Checkpoints: epoch · CPU s to reach it · normalized margin q_min / rho^4 "
        "(paper: " + "; ".join(f"{t:g}: {e} · {m:.3g}" for t, (e, _, m) in PAPER.items()) + ")",
        "",
    ]
    lines.append(
        "| n_train | batch | dtype | alpha(0) | "
        + " | ".join(f"{t:g}" for t in THRESHOLDS)
        + " | end |"
    )
    lines.append("|" + "---|" * (5 + len(THRESHOLDS)))
    for r in rows:
        by_th = {c["threshold"]: c for c in r["checkpoints"] if c["threshold"] is not None}
        end = next(c for c in r["checkpoints"] if c["name"] == "final")
        cks = " | ".join(_fmt_ck(by_th.get(t)) for t in THRESHOLDS)
        lines.append(
            f"| {r['n_train']} | {r['batch']} | {r['dtype']} | {r['alpha0']:g} | {cks} | {_fmt_ck(end)} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--root", default="../shared/data", help="data_root holding MNIST/raw")
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/margin_scale"))
    ap.add_argument("--n-train", type=int, nargs="+", default=[20, 200, 1000, 5000])
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--batch", nargs="+", default=["full", "100"], help="'full' or a batch size")
    ap.add_argument(
        "--dtype", nargs="+", default=["float64", "float32"], choices=["float64", "float32"]
    )
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.01])
    ap.add_argument("--model", default="margin_cnn_small", choices=list(MODELS))
    ap.add_argument("--budget", type=float, default=600.0, help="CPU s per cell")
    ap.add_argument("--max-epochs", type=int, default=1_000_000)
    ap.add_argument("--stop", type=float, default=-300.0, help="stop below this log10 L")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--robustness", metavar="CELL", help="time the robustness job on CELL")
    ap.add_argument("--attack-points", type=int, default=200)
    ap.add_argument("--bisection-points", type=int, default=20)
    ap.add_argument("--fab-iter", type=int, default=100)
    ap.add_argument("--robust-dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--table", action="store_true", help="print the markdown tables and exit")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.table:
        print(markdown(read_records(args.out)))
        for r in read_records(args.out, "robustness.jsonl"):
            print(json.dumps(r))
        return
    if args.robustness:
        cfg = MarginRobustConfig(
            attack_points=args.attack_points,
            bisection_points=args.bisection_points,
            fab_iter=args.fab_iter,
        )
        rec = time_robustness(args.out, args.robustness, args.root, cfg, args.robust_dtype)
        with (args.out / "robustness.jsonl").open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec))
        return
    for n in args.n_train:
        data = mnist_run_data(args.root, n, args.n_test, args.seed)
        for batch in args.batch:
            for dtype in args.dtype:
                for alpha in args.alphas:
                    key = cell_key(n, batch, dtype, alpha, args.model)
                    print(f"{key}: training (budget {args.budget:.0f} CPU s)", flush=True)
                    rec, res, hist = train_cell(
                        data,
                        args.model,
                        batch,
                        dtype,
                        alpha,
                        args.budget,
                        args.max_epochs,
                        args.seed,
                        args.stop,
                    )
                    rec["model"] = args.model
                    hist.to_csv(args.out / f"{key}.history.csv", index=False)
                    torch.save(
                        {c.name: vars(c) for c in res.checkpoints},
                        args.out / f"{key}.checkpoints.pt",
                    )
                    with (args.out / "cells.jsonl").open("a") as f:
                        f.write(json.dumps(rec) + "\n")
                    print(
                        f"{key}: log10 L {rec['log10_loss']:.2f} after {rec['epochs']} epochs "
                        f"({rec['redone']} redone), {rec['cpu']:.0f} CPU s, {rec['stop_reason']}; "
                        + ", ".join(
                            f"{c['name']} @{c['epoch']} {c['cpu']:.0f}s nm {c['normalized_margin']:.3g}"
                            for c in rec["checkpoints"]
                        ),
                        flush=True,
                    )


if __name__ == "__main__":
    main()
