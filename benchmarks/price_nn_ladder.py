"""Study PRICE-NN on the training set only (issue 37): learning rates, the CNN's capacity
ladder, loss thresholds, step budgets and the cost per cell.

Each *cell* trains one net through the library calls of the workflow's ``train`` job
(``make_dataset`` -> ``dataset_from_arrays`` -> ``model_readout`` / ``build_model`` ->
``net_train_fields`` -> ``train_network``; same data, init and robust-ERM streams as the
job) and reads nothing but the training set:

* the data is the config's dataset entry (``--dataset``; CNN: ``mnist10``, the 10-class
  MNIST subsets; FC: ``mnist_2v7``) at ``n_train = --n`` for the seed; its test split is
  cut to ``n_test = 10`` images and never evaluated;
* the net is the config's model entry (``--model``) with ``width_multiplier = --width``
  (CNN) or as given (FC); the optimizer is the config's entry of the algorithm
  (``--optimizers``, e.g. ``price_cnn_gd price_cnn_sd``) with ``lr`` (``--lrs``),
  ``max_steps`` (``--max-steps``), robust ERM at ``--eps``, one history row per step and no
  curves (``eval_every`` dropped: the curve hook would read test points);
* it records per step the train loss and the accuracy of the perturbed batch (robust train
  accuracy under the training PGD, the trainer's own ``acc``), the first step at which the
  loss is below each of ``--thresholds`` *and* the batch is classified without error (the
  study's reporting time; training stops at the smallest threshold), and at the end the
  robust train error of the final net under a fresh draw of the training PGD on every
  training image, and the CPU seconds (``time.process_time``, one thread).

One JSON record per cell goes to ``OUT/cells.jsonl`` (``--tag`` names the experiment);
``--table`` prints the records as markdown tables (per tag: cell, lr, width, per seed and
algorithm the steps to each threshold or "not reached", the last loss, the final robust
train error, CPU-s). No test accuracy is computed anywhere in this script.

The width selection rule (written down before the ladder's runs at the hardest cell;
docs/studies/price_nn.md, "The CNN's width"): the study's CNN width multiplier is the
smallest width on the ladder {1, 2, 4, 8}, tried in increasing order, at which GD and SD
both *fit* on every ladder seed (0, 1, 2) at the study's hardest cell -- the largest n and
the largest eps of the CNN grid -- within the study's step budget (the optimizers'
``max_steps``). A run fits (:func:`fits`) when it reaches the cell's loss threshold (the
optimizers' ``stop_loss``; the smallest of ``--thresholds``) with the perturbed batch
classified without error, and its final net has robust train error 0 under a fresh draw of
the training PGD on every training image. A width is out at its first run that does not
fit (``--stop-width-on-miss``: its remaining seeds and algorithms are not run). Training
data only: no test accuracy, no claim, no verdict is involved. ``--select TAG`` applies
the rule to the records of a tag (:func:`select_width`).

The FC learning-rate rule (issue 37 item 4; docs/studies/price_nn.md, "The FC learning
rates"; written down before its runs): on the study's FC robust cell (MNIST 2 vs 7,
n = 100, eps = 0.1, seeds 0, 1, 2, 3,000 steps), :func:`search_rates` over the grid
{1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1}; a run fits when its final
net has robust train error 0 (the study's FC fit rule, ``FIT_RULE["fc"]``). ``--search-rates``
runs it (resumable: records already under ``--tag`` are read, not retrained).

    L="nice -n 5 python benchmarks/price_nn_ladder.py --data-root ../shared/data --out results/benchmarks/price_nn_ladder"
    $L --tag lr --n 100 --eps 0.2 --width 2 --lrs 0.05 0.1 0.2 --seeds 0 --max-steps 400
    $L --tag ladder --n 100 --eps 0.2 --width 1 2 4 --seeds 0 1 2 --max-steps 1500
    $L --tag fc_lr --arch fc --n 100 --eps 0.1 --lrs 1e-3 2e-3 5e-3 1e-2 2e-2 --max-steps 3000
    $L --tag ladder_hardest --n 50 --eps 0.2 --width 1 2 4 8 --seeds 0 1 2 --stop-width-on-miss
    $L --tag fc_rates --arch fc --n 100 --eps 0.1 --search-rates --thresholds 1e-12 \
        --max-steps 3000 --lrs 1e-4 2e-4 5e-4 1e-3 2e-3 5e-3 1e-2 2e-2 5e-2 1e-1
    $L --table
    $L --select ladder_hardest
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import pandas as pd
import torch
import yaml

from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.data.registry import make_dataset
from ibrobust.models.registry import BuildContext, build_model, model_readout
from ibrobust.seeding import torch_generator
from ibrobust.studies.price_nn import algorithm
from ibrobust.studies.price_nn.rows import FIT_RULE
from ibrobust.training.adversarial import perturb_batch
from ibrobust.training.losses import supervised_correct
from ibrobust.training.network import NetTrainConfig, net_train_fields, train_network

ROOT = Path(__file__).resolve().parents[1]
ARCH = {  # arch -> (dataset, model, optimizers, supervision) of the config's study
    "cnn": ("mnist10", "madry_cnn_cpu", ("price_cnn_gd", "price_cnn_sd"), "multiclass"),
    "fc": ("mnist_2v7", "fc_price", ("price_fc_gd", "price_fc_sd"), "binary"),
}


def first_fit(history: list[dict], threshold: float) -> int | None:
    """The first step whose loss is below ``threshold`` with the perturbed batch classified
    without error (the study's reporting time), None if none."""
    for rec in history:
        if rec["loss"] < threshold and rec["acc"] >= 1.0:
            return int(rec["epoch"])
    return None


def fits(rec: dict) -> bool:
    """A ladder run fits, by the study's fit rule for its arch (``FIT_RULE``): its final
    robust train error (fresh training PGD, every training image) is 0 and, for a CNN
    ("threshold"), it reached its smallest loss threshold (the cell's ``stop_loss``) with the
    perturbed batch classified without error; an FC run ("end": a fixed number of steps)
    needs only the first."""
    if rec.get("diverged"):
        return False
    if rec["robust_train_err"] != 0.0:
        return False
    if FIT_RULE.get(rec.get("arch", "cnn"), "threshold") == "end":
        return True
    smallest = min(rec["reached"], key=float)
    return rec["reached"][smallest] is not None


def search_rates(fit, rates, seeds=(0, 1, 2), algorithms=("gd", "sd"), want_common=True) -> dict:
    """The FC learning-rate search (docs/studies/price_nn.md, "The FC learning rates").

    ``fit(algorithm, lr, seed) -> bool`` trains (or looks up) one run. A (algorithm, rate)
    *fits* when every seed fits; its seeds are tried in order and it is out at its first
    seed that does not fit. (1) Per algorithm, the rates in decreasing order until one fits:
    ``r[a]``, the largest fitting rate (None if none). (2) The common rate: no rate above
    ``m = min(r)`` fits the algorithm whose ``r`` is ``m``, so the largest rate fitting both
    is at most ``m``; from ``m`` down, the other algorithm, and where it fits the first one,
    until a rate fits both. (3) Returns ``{"common": rate or None, "per_algorithm": r,
    "lr": {a: rate}, "fitting_seeds": {a: count}}``: the common rate for both where it
    exists (the paper's setting), else each algorithm's own ``r[a]``. (4) An algorithm with
    no fitting rate is run on every seed at every rate (no stop at a miss) and gets the rate
    at which the most seeds fit, the largest on ties; the claims then use the seeds where
    both fit. ``fitting_seeds`` counts the seeds that fit at the chosen rate. With
    ``want_common=False`` step (2) is skipped: each algorithm at its own largest fitting rate (the
    CNN, which the paper trains at one rate per algorithm).
    """
    order = sorted(rates, reverse=True)
    memo: dict[tuple, bool] = {}

    def fits_all(a, lr) -> bool:
        if (a, lr) not in memo:
            memo[(a, lr)] = all(fit(a, lr, s) for s in seeds)  # all() stops at a miss
        return memo[(a, lr)]

    largest = {a: next((lr for lr in order if fits_all(a, lr)), None) for a in algorithms}
    common = None
    if want_common and all(v is not None for v in largest.values()):
        m = min(largest.values())
        first = min(algorithms, key=lambda a: (largest[a], algorithms.index(a)))
        others = [a for a in algorithms if a != first]
        for lr in (r for r in order if r <= m):
            if all(fits_all(a, lr) for a in others) and fits_all(first, lr):
                common = lr
                break
    lr_of = {a: common for a in algorithms} if common is not None else dict(largest)
    n_fit = {a: len(seeds) for a in algorithms if lr_of[a] is not None}
    for a in (a for a in algorithms if lr_of[a] is None):
        counts = {lr: sum(bool(fit(a, lr, s)) for s in seeds) for lr in order}
        lr_of[a] = max(order, key=lambda lr: (counts[lr], lr))
        n_fit[a] = counts[lr_of[a]]
    return {"common": common, "per_algorithm": largest, "lr": lr_of, "fitting_seeds": n_fit}


def select_width(recs: list[dict], seeds=(0, 1, 2), algorithms=("gd", "sd")) -> float | None:
    """The smallest width at which every (seed, algorithm) run fits (:func:`fits`); None when
    no width of the records does. A width missing a run of ``seeds`` x ``algorithms`` (and
    with no run that does not fit) is not selected: the rule needs every seed."""
    by_width: dict[float, dict[tuple, dict]] = {}
    for r in recs:
        by_width.setdefault(float(r["width"]), {})[(int(r["seed"]), r["algorithm"])] = r
    for width in sorted(by_width):
        runs = by_width[width]
        if all((s, a) in runs and fits(runs[(s, a)]) for s in seeds for a in algorithms):
            return width
    return None


def robust_train_error(net, data, opt_cfg: NetTrainConfig, supervision: str, seed: int) -> float:
    """1 - accuracy of the final net on every training image under a fresh draw of the
    training PGD (clean error for plain ERM)."""
    tr = data.train
    x = tr.x
    if opt_cfg.adversarial is not None and opt_cfg.adversarial.active:
        gen = torch_generator(seed, "ladder", "robust_train")
        x = perturb_batch(net, tr.x, tr.y, tr.fine, opt_cfg.adversarial, supervision, gen)
    with torch.no_grad():
        z = net(x)
    correct = supervised_correct(supervision, z, net.readout, tr.y, tr.fine)
    return 1.0 - float(correct.float().mean())


def run_cell(cfg: dict, args, arch: str, opt_name: str, lr: float | None, width, seed: int):
    ds_name, model_name, _, supervision = ARCH[arch]
    ds = {**cfg["datasets"][args.dataset or ds_name], "n_train": args.n, "n_test": 10}
    ds["download"] = False
    arrays, _ = make_dataset(ds, seed, args.data_root)
    data = dataset_from_arrays(arrays)
    model = dict(cfg["models"][args.model or model_name])
    if width is not None:
        model["width_multiplier"] = width
    opt = {k: v for k, v in cfg["optimizers"][opt_name].items() if k not in ("eval_every",)}
    opt.update(log_every=1, n_checkpoints=0, stop_loss=min(args.thresholds))
    opt["adversarial"] = {**(opt.get("adversarial") or {}), "eps": args.eps}
    if lr is not None:
        opt["lr"] = lr
    if args.max_steps is not None:
        opt["max_steps"] = args.max_steps
    tcfg = NetTrainConfig(**net_train_fields(opt))
    readout = model_readout(model, supervision, data.sign)
    net = build_model(model, BuildContext(data.input_shape, readout, seed, data.train.x))
    t0 = time.process_time()
    try:
        res = train_network(net, data.train.x, data.train.y, data.train.fine, supervision,
                            tcfg, seed, "cpu")  # fmt: skip
        hist, diverged = res.history, False
    except FloatingPointError:
        hist, diverged = [], True
    train_cpu = time.process_time() - t0
    rec = {
        "tag": args.tag, "arch": arch, "n": args.n, "eps": args.eps, "seed": seed,
        "optimizer": opt_name, "algorithm": algorithm(opt), "lr": opt["lr"],
        "width": model.get("width_multiplier", 1), "max_steps": opt["max_steps"],
        "diverged": diverged, "train_cpu_s": round(train_cpu, 2),
    }  # fmt: skip
    if diverged:
        return rec
    t1 = time.process_time()
    err = robust_train_error(net, data, tcfg, supervision, seed)
    losses = [h["loss"] for h in hist]
    rec.update(
        steps=len(hist),
        cpu_s_per_step=round(train_cpu / max(len(hist), 1), 4),
        reached={f"{t:g}": first_fit(hist, t) for t in args.thresholds},
        first_zero_err=next((int(h["epoch"]) for h in hist if h["acc"] >= 1.0), None),
        final_loss=losses[-1],
        min_loss=min(losses),
        final_batch_acc=hist[-1]["acc"],
        robust_train_err=err,
        loss_every_50={int(h["epoch"]): round(h["loss"], 4) for h in hist if h["epoch"] % 50 == 0},
        eval_cpu_s=round(time.process_time() - t1, 2),
    )
    return rec


def _records(out: Path, tag: str | None = None) -> list[dict]:
    """The records of ``OUT/cells.jsonl`` (of one tag when given); none without the file."""
    path = out / "cells.jsonl"
    if not path.exists():
        return []
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in recs if tag is None or r["tag"] == tag]


def _append(out: Path, rec: dict) -> None:
    with open(out / "cells.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps({k: v for k, v in rec.items() if k != "loss_every_50"}), flush=True)


def run_search(cfg: dict, args, out: Path) -> None:
    """:func:`search_rates` over ``--lrs`` for the arch's two optimizers, each run recorded
    under ``--tag`` (a run already recorded there is read, not trained again: resumable)."""
    opt_of = {algorithm(cfg["optimizers"][o]): o for o in (args.optimizers or ARCH[args.arch][2])}
    done = {(r["algorithm"], float(r["lr"]), int(r["seed"])): r for r in _records(out, args.tag)}

    def fit(alg: str, lr: float, seed: int) -> bool:
        key = (alg, float(lr), int(seed))
        if key not in done:
            done[key] = run_cell(cfg, args, args.arch, opt_of[alg], lr, None, seed)
            _append(out, done[key])
        return fits(done[key])

    result = search_rates(fit, args.lrs, tuple(args.seeds), tuple(opt_of), not args.no_common_rate)
    print(json.dumps({"tag": args.tag, **result}))


def run(args) -> None:
    torch.set_num_threads(1)
    cfg = yaml.safe_load((ROOT / args.config).read_text())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.search_rates:
        run_search(cfg, args, out)
        return
    arch = args.arch
    opts = args.optimizers or list(ARCH[arch][2])
    lrs = args.lrs or [None]
    widths = args.width if arch == "cnn" else [None]
    for width in widths:
        for lr in lrs:
            missed = False
            for seed in args.seeds:
                for opt_name in opts:
                    if missed:
                        break
                    rec = run_cell(cfg, args, arch, opt_name, lr, width, seed)
                    _append(out, rec)
                    missed = args.stop_width_on_miss and not fits(rec)


def table(args) -> None:
    df = pd.DataFrame(_records(Path(args.out)))
    if df.empty:
        raise SystemExit(f"no records in {Path(args.out) / 'cells.jsonl'}")
    for tag, g in df.groupby("tag", sort=False):
        print(f"\n### {tag}\n")
        print("| arch | n | eps | width | alg | lr | seed | steps to thresholds | first 0 err "
              "| last loss | robust train err | steps | CPU-s |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in g.itertuples():
            if r.diverged:
                print(f"| {r.arch} | {r.n} | {r.eps:g} | {r.width:g} | {r.algorithm} | {r.lr:g} "
                      f"| {r.seed} | diverged | | | | | {r.train_cpu_s:.0f} |")  # fmt: skip
                continue
            reached = ", ".join(
                f"{t}: {s if s is not None else 'not reached'}" for t, s in r.reached.items()
            )
            print(
                f"| {r.arch} | {r.n} | {r.eps:g} | {r.width:g} | {r.algorithm} | {r.lr:g} | "
                f"{r.seed} | {reached} | {_int(r.first_zero_err)} | {r.final_loss:.4g} | "
                f"{r.robust_train_err:.3f} | {r.steps} | {r.train_cpu_s:.0f} |"
            )


def select(args) -> None:
    recs = _records(Path(args.out), args.select)
    if not recs:
        raise SystemExit(f"no records with tag {args.select!r} in {Path(args.out) / 'cells.jsonl'}")
    width = select_width(recs, tuple(args.seeds))
    print(f"tag {args.select}: width {width if width is not None else 'none of the ladder'}")


def _int(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else str(int(v))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-root", default="../shared/data")
    ap.add_argument("--config", default="config.yaml", help="relative to the repository")
    ap.add_argument("--out", default="results/benchmarks/price_nn_ladder")
    ap.add_argument("--tag", default="cells")
    ap.add_argument("--arch", choices=tuple(ARCH), default="cnn")
    ap.add_argument("--dataset", help="dataset entry (default: the arch's)")
    ap.add_argument("--model", help="model entry (default: the arch's)")
    ap.add_argument("--optimizers", nargs="+", help="optimizer entries (default: GD and SD)")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--width", type=float, nargs="+", default=[1.0])
    ap.add_argument("--lrs", type=float, nargs="+")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--max-steps", type=int)
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.1, 0.05, 0.02, 0.01])
    ap.add_argument("--stop-width-on-miss", action="store_true",
                    help="a width is out at its first run that does not fit")  # fmt: skip
    ap.add_argument("--search-rates", action="store_true",
                    help="the FC learning-rate search over --lrs (search_rates)")  # fmt: skip
    ap.add_argument("--no-common-rate", action="store_true",
                    help="--search-rates without the common rate (each its largest)")  # fmt: skip
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--select", metavar="TAG", help="the width the selection rule picks")
    args = ap.parse_args()
    if args.select:
        select(args)
    else:
        table(args) if args.table else run(args)


if __name__ == "__main__":
    main()
