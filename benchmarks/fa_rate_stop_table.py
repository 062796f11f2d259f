"""Study FA's 2-class readings against the GD rate and the stopping loss (issue 36 item 6;
prints, never asserts).

Reads the studies of ``configs/fa_rate_stop.yaml`` (one per (rate, stop) cell, each a cut
of Study FA) after they ran, and computes, with the claims' own compute functions
(:mod:`ibrobust.studies.feature_averaging.measures`): the same-class cosine
(``fa.cosine_blocks``, raw and x sqrt(k/2)), the averaging index (``fa.averaging_index``)
and the binary radius (``fa.binary_radius``: critical radius of the worst case over the
attacks / sqrt(d/k)), per seed; beside them GD's steps (``train.steps`` of metrics.json)
and the CPU-s of each seed's train and attack jobs (the Snakemake benchmark files). Then
applies the decision rule written in the config's header (paired differences over seeds,
95 % t intervals) and prints the markdown table of docs/studies/fa.md.

    PYTHONPATH=src python benchmarks/fa_rate_stop_table.py [--results results]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ibrobust.claims.core import StudyContext
from ibrobust.claims.intervals import t_interval
from ibrobust.studies.feature_averaging.measures import (
    BINARY,
    binary_over_theory,
    column_of,
    rows,
)

ROOT = Path(__file__).resolve().parents[1]
OVERLAY = ROOT / "configs" / "fa_rate_stop.yaml"
DATASET = "clusters_d1000"
SMALL, LARGE = 0.0316, 0.5  # the rule's two rates: 1/sqrt(d) and Study FA's default
STOPS = (1e-2, 1e-5)
MAGNITUDE = 0.1  # the rule's second arm: |mean paired difference| > 0.1 (raw cosine)


def merged_config(base: Path, overlay: Path) -> dict:
    """config.yaml with the overlay's optimizers and studies added (Snakemake's merge of
    these two top-level mappings; the overlay only adds entries to them)."""
    cfg = yaml.safe_load(base.read_text())
    over = yaml.safe_load(overlay.read_text())
    for key in ("optimizers", "studies"):
        cfg[key] = {**cfg[key], **over[key]}
    return cfg


def cpu_seconds(tsv: Path) -> float:
    """The cpu_time column of a Snakemake benchmark file (NaN when absent)."""
    return float(pd.read_csv(tsv, sep="\t")["cpu_time"].iloc[-1]) if tsv.exists() else math.nan


def study_rows(name: str, cfg: dict, results: Path) -> pd.DataFrame:
    """One row per seed of one (rate, stop) study."""
    st = cfg["studies"][name]
    (opt,) = st["optimizers"]
    (model,) = st["models"]
    ctx = StudyContext(
        name=name,
        config=st,
        datasets=cfg["datasets"],
        models=cfg["models"],
        optimizers=cfg["optimizers"],
    )
    summary = pd.read_csv(results / name / "figures" / "summary.csv")
    src = {"summary": summary}
    k = int(cfg["datasets"][DATASET]["k"])
    seeds = list(rows(summary, DATASET, BINARY).index)
    cos = column_of(DATASET, (BINARY,), "cosine_same_class_mean")(src, ctx)
    cos_k = column_of(DATASET, (BINARY,), "cosine_same_class_mean", math.sqrt(k / 2))(src, ctx)
    fa = column_of(DATASET, (BINARY,), "fa_index")(src, ctx)
    radius = binary_over_theory(DATASET)(src, ctx)
    out = []
    for i, s in enumerate(seeds):
        run = Path(DATASET) / model / opt / BINARY / f"seed{s}"
        metrics = json.loads((results / name / run / "metrics.json").read_text())
        bench = results / "benchmarks"
        out.append(
            dict(
                study=name,
                lr=float(cfg["optimizers"][opt]["lr"]),
                stop=float(cfg["optimizers"][opt]["stop_loss"]),
                seed=int(s),
                cosine=cos.values[i],
                cosine_x=cos_k.values[i],
                fa_index=fa.values[i],
                radius=radius.values[i],
                radius_censored=radius.lower_bound,
                steps=int(metrics["train.steps"]),
                converged=bool(metrics["train.converged"]),
                cpu_train=cpu_seconds(bench / "train" / name / f"{run}.tsv"),
                cpu_attack=cpu_seconds(bench / "attack" / name / f"{run}.main.tsv"),
            )
        )
    return pd.DataFrame(out)


def paired(df: pd.DataFrame, a: tuple[float, float], b: tuple[float, float]) -> str:
    """The rule's test on cosine(a) - cosine(b), paired by seed; a, b = (lr, stop)."""
    x = df[(df.lr == a[0]) & (df.stop == a[1])].set_index("seed")["cosine"]
    y = df[(df.lr == b[0]) & (df.stop == b[1])].set_index("seed")["cosine"]
    seeds = x.index.intersection(y.index)
    if len(seeds) < 2:
        return (
            f"lr {a[0]:g} stop {a[1]:g} - lr {b[0]:g} stop {b[1]:g}: fewer than 2 paired "
            f"seeds ({list(seeds)}), not decided"
        )
    diff = (x[seeds] - y[seeds]).to_numpy()
    iv = t_interval(diff)
    depends = iv.lo > 0 or iv.hi < 0 or abs(iv.center) > MAGNITUDE
    return (
        f"lr {a[0]:g} stop {a[1]:g} - lr {b[0]:g} stop {b[1]:g}: {iv.center:+.4f} "
        f"[{iv.lo:+.4f}, {iv.hi:+.4f}] (n = {iv.n}) -> {'DEPENDS' if depends else 'no'}"
    )


def _ms(v: pd.Series, digits: int = 3) -> str:
    return (
        f"{v.mean():.{digits}f} +- {v.std(ddof=1):.{digits}f}"
        if len(v) > 1
        else f"{v.mean():.{digits}f}"
    )


def markdown(df: pd.DataFrame) -> str:
    head = (
        "| rate (x sqrt(d)) | stop | n | cosine | x sqrt(k/2) | averaging index | "
        "radius / sqrt(d/k) | GD steps | CPU-s train / seed | CPU-s attack / seed |"
    )
    lines = [head, "|" + "---|" * 10]
    for (lr, stop), g in df.groupby(["lr", "stop"], sort=True):
        cens = " (>=)" if g.radius_censored.any() else ""
        steps = f"{int(g.steps.min())}-{int(g.steps.max())}"
        if not g.converged.all():
            steps += " (not all converged)"
        lines.append(
            f"| {lr:g} ({lr * math.sqrt(1000):.1f}) | {stop:g} | {len(g)} | {_ms(g.cosine)} | "
            f"{_ms(g.cosine_x)} | {_ms(g.fa_index)} | {_ms(g.radius)}{cens} | {steps} | "
            f"{_ms(g.cpu_train, 1)} | {_ms(g.cpu_attack, 1)} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / "results")
    ap.add_argument("--csv", type=Path, help="also write the per-seed rows here")
    a = ap.parse_args()
    cfg = merged_config(ROOT / "config.yaml", OVERLAY)
    names = yaml.safe_load(OVERLAY.read_text())["studies"]
    done = [n for n in names if (a.results / n / "figures" / "summary.csv").exists()]
    df = pd.concat([study_rows(n, cfg, a.results) for n in done], ignore_index=True)
    if a.csv:
        df.to_csv(a.csv, index=False)
    print(markdown(df))
    print(f"\nnot run yet: {sorted(set(names) - set(done)) or 'none'}")
    print("\nDecision rule (configs/fa_rate_stop.yaml), paired over seeds, 95 % t intervals:")
    for stop in STOPS:
        print("(a) rate,", paired(df, (SMALL, stop), (LARGE, stop)))
    for lr in (SMALL, LARGE):
        print("(b) stop,", paired(df, (lr, STOPS[0]), (lr, STOPS[1])))
    for (lr, stop), g in df.groupby(["lr", "stop"]):
        print(f"lr {lr:g} stop {stop:g}: CPU-s train per seed {np.round(g.cpu_train, 1).tolist()}")


if __name__ == "__main__":
    main()
