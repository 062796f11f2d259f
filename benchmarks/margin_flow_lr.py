"""Study MARGIN's constant-step arm (training.flow): how its lr and epochs were chosen.

The lr, on the train loss only. For each seed of the study, from the net the seed's
loss-based run starts from (``build_net`` on the seed's data, as ``margin_flow`` builds it),
full-batch GD runs at each lr of a grid, largest first, until the data is fit in the
theorem's sense (L_sum < log 2 and every training point classified correctly: the
``separated`` checkpoint of ``train_flow``) or ``--cap`` steps. An lr passes for a seed when
the train loss decreased at every step from the initialisation to separation (a strict
decrease of log L, in float64) and separation came within the cap (a larger lr fails at its
first rise, so trying it is cheap). The grid is scanned largest first, each lr on every seed
in turn (a failing seed ends that lr); the chosen lr is the first (largest) that passes for
every seed. No margin, rate, test number or claim is looked at: each record holds only the
lr, the seed, whether the loss fell at every step, the first step at which it rose, the
separation step, log10 L there, and the CPU seconds.

The epochs, on CPU time. ``--time LR --steps N`` times ``train_flow`` itself (the job's
library call, with its logging every ``--log-every`` steps and no MLflow) on seed 0 for N
steps: CPU seconds per step, which the epoch budget divides.

    B="python benchmarks/margin_flow_lr.py --root ../shared/data"
    $B --grid 5 2 1 0.5 0.2 0.1 0.05 0.02 0.01 --cap 20000
    $B --time 0.5 --steps 2000 --log-every 10

Records go to stdout as JSON lines (one per (seed, lr) tried, then a summary line).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch
import yaml

from ibrobust.analysis.margin import log_ce, log_mean_loss, margins
from ibrobust.config import load_schema, validate_config
from ibrobust.data.registry import make_dataset
from ibrobust.studies.margin.experiment import build_net, run_data
from ibrobust.training.flow import FlowConfig, train_flow

REPO = Path(__file__).resolve().parents[1]
LOG_LOG2 = math.log(math.log(2.0))  # L_sum < log 2  <=>  log L_sum < log log 2


def study_runs(study: str, root: str):
    """(seed, RunData, model spec, supervision) of each seed of ``study`` in config.yaml."""
    cfg = validate_config(
        yaml.safe_load((REPO / "config.yaml").read_text()),
        load_schema(REPO / "schemas" / "config.schema.yaml"),
    )
    st = cfg["studies"][study]
    spec, model = cfg["datasets"][st["datasets"][0]], cfg["models"][st["models"][0]]
    for seed in st["seeds"]:
        arrays, _ = make_dataset(spec, seed, root)
        yield seed, run_data(arrays, st["supervision"]), model, st["supervision"]


def gd_until_separation(net, x, y, lr: float, cap: int) -> dict:
    """Full-batch GD at ``lr`` (the step of ``train_flow``: lr * L * grad log L) until the
    data is fit or ``cap`` steps; stops at the first step whose loss is not below the last."""
    params = [p for p in net.parameters() if p.requires_grad]
    last, c0 = math.inf, time.process_time()
    out = dict(lr=lr, decreasing=True, first_rise=None, separated=None, log10_loss_at_sep=None)
    for step in range(cap + 1):
        logits = net(x)
        lce = log_ce(logits, y)
        log_l = log_mean_loss(lce)
        v = float(log_l.detach())
        if not (math.isfinite(v) and v < last):
            out.update(decreasing=False, first_rise=step)
            break
        last = v
        q = margins(logits.detach(), y)
        if bool((q > 0).all()) and float(torch.logsumexp(lce.detach(), 0)) < LOG_LOG2:
            out.update(separated=step, log10_loss_at_sep=v / math.log(10.0))
            break
        grads = torch.autograd.grad(log_l, params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(g, alpha=lr * math.exp(v))
    out["passes"] = out["decreasing"] and out["separated"] is not None
    out["cpu_seconds"] = round(time.process_time() - c0, 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="data_root holding MNIST")
    ap.add_argument("--study", default="margin_small")
    ap.add_argument("--grid", type=float, nargs="+", default=[5, 2, 1, 0.5, 0.2, 0.1, 0.05])
    ap.add_argument("--cap", type=int, default=20000, help="steps allowed to reach separation")
    ap.add_argument("--time", type=float, default=None, help="time train_flow at this lr")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--log-every", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.time is not None:
        seed, data, model, sup = next(study_runs(a.study, a.root))
        net = build_net(model, data, sup, seed)
        cfg = FlowConfig(lr=a.time, epochs=a.steps, log_every=a.log_every)
        c0 = time.process_time()
        res = train_flow(net, data.x, data.y, cfg, x_test=data.x_test, y_test=data.y_test)
        cpu = time.process_time() - c0
        print(json.dumps(dict(lr=a.time, steps=a.steps, log_every=a.log_every,
                              cpu_seconds=round(cpu, 2), cpu_per_step=cpu / a.steps,
                              stop_reason=res.stop_reason)))  # fmt: skip
        return
    runs, chosen = list(study_runs(a.study, a.root)), None
    for lr in sorted(a.grid, reverse=True):  # largest first; an lr is tried on every seed
        ok = True
        for seed, data, model, sup in runs:
            net = build_net(model, data, sup, seed)  # the loss-based run's initialisation
            rec = dict(seed=seed, **gd_until_separation(net, data.x, data.y, lr, a.cap))
            print(json.dumps(rec), flush=True)
            if not rec["passes"]:
                ok = False
                break  # this lr fails: the next, smaller one
        if ok:
            chosen = lr
            break
    print(json.dumps(dict(study=a.study, grid=sorted(a.grid, reverse=True), chosen_lr=chosen)))


if __name__ == "__main__":
    main()
