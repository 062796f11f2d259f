"""Margin vs input gradient per test point on Study FA's trained models (prints, never
asserts; issue 11 section 2).

For every model.pt of a results tree (``results/<study>/<dataset>/<model>/<optimizer>/
<supervision>/seed<s>/``) and each binary readout (k-class nets: each of ``--readouts``
the readout module knows; 2-class and reference nets have one score), the first
``--points`` test points get: margin q = y F(x), ||grad_x q||, q / ||grad_x q|| and the
breaking radius of the worst case over the study's attacks on a fine radius grid
(:mod:`ibrobust.analysis.margin_gradient`). Writes the per-point CSV, the figure and the
per-(training, readout, seed) summary, and prints the summary's medians.

    python benchmarks/check_margin_gradient.py --results DIR/results --study fa \
        --dataset clusters_d1000 --points 300 --out DIR/margin_gradient
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import torch
import yaml

from ibrobust.analysis.margin_gradient import MarginGradientConfig, run_points, summarize
from ibrobust.attacks.policy import attack_applies
from ibrobust.data.dataset import dataset_from_arrays
from ibrobust.io import load_npz, load_torch, save_csv, save_figure
from ibrobust.models.readout import READOUTS
from ibrobust.models.registry import load_model
from ibrobust.studies.feature_averaging.margin_gradient_figure import margin_gradient_figure

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--study", default="fa")
    ap.add_argument("--dataset", default="clusters_d1000")
    ap.add_argument("--config", type=Path, default=ROOT / "config.yaml")
    ap.add_argument("--points", type=int, default=MarginGradientConfig.points)
    ap.add_argument("--step", type=float, default=MarginGradientConfig.radius_step)
    ap.add_argument("--readouts", nargs="+", default=["sum", "argmax", "log_odds"])
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    cfg = yaml.safe_load(a.config.read_text())
    st = cfg["studies"][a.study]
    specs = {n: cfg["attacks"][n] for n in st["attacks"]}
    ds = cfg["datasets"][a.dataset]
    top = max(float(r) for r in st["radii"])
    radii = MarginGradientConfig(a.points, a.step).radii(top)
    unknown = [r for r in a.readouts if r not in READOUTS]
    if unknown:
        raise SystemExit(f"--readouts: {unknown} not among {READOUTS}")
    readouts = list(a.readouts)
    frames, rows = [], []
    for model_pt in sorted((a.results / a.study / a.dataset).glob("*/*/*/seed*/model.pt")):
        model, opt, sup, seed_dir = model_pt.parts[-5:-1]
        seed = int(seed_dir.removeprefix("seed"))
        data_file = a.results / "datasets" / a.dataset / seed_dir / "data.npz"
        data = dataset_from_arrays(load_npz(data_file), str(data_file))
        state = load_torch(model_pt)
        net = load_model(state)
        label = "robust reference" if state.get("kind") == "robust_reference" else sup
        run_specs = {n: s for n, s in specs.items() if attack_applies(s, sup, "binary")}
        t0 = time.perf_counter()
        pts = run_points(net, data, sup, readouts, run_specs, radii, a.points, seed)
        pts.insert(0, "label", label)
        pts.insert(1, "seed", seed)
        frames.append(pts)
        for ro, g in pts.groupby("readout", sort=False):
            rows.append({"label": label, "readout": ro, "seed": seed, **summarize(g)})
        print(f"{label:16s} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
    points = pd.concat(frames, ignore_index=True)
    summary = pd.DataFrame(rows)
    a.out.mkdir(parents=True, exist_ok=True)
    save_csv(a.out / "margin_gradient_points.csv", points)
    save_csv(a.out / "margin_gradient_summary.csv", summary)
    fig = margin_gradient_figure(points, d=int(ds["d"]), k=int(ds["k"]))
    save_figure(fig, a.out / "margin_gradient.png", a.out / "margin_gradient.pdf")
    cols = [c for c in summary.columns if c.endswith(".median")] + ["frac_unbroken"]
    agg = summary.groupby(["label", "readout"], sort=False)[cols].agg(["mean", "std"])
    print(f"radius grid 0..{top} step {a.step}; {a.points} test points; attacks {list(specs)}")
    print(agg.round(3).to_string())


if __name__ == "__main__":
    main()
