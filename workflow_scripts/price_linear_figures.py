"""Rule price_linear_figures: Study PRICE-LIN's figures and tables, one job: robust gap vs n
per algorithm, ERM and robust ERM side by side (paper Fig. 1 bottom, 2 left, 5); the
regime x eps heatmaps of the mean over n of gap(first) - gap(second), robust (Fig. 2 right)
and clean (Fig. 6); the cosines between the algorithms' solutions vs eps / gamma* (they
approach 1 as eps -> gamma*, Lemma C.4); the per-setting means over draws and the study's
numbers."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
from _figures import gather_csv, save_outputs
from _job import Job

from ibrobust.io import atomic_path, load_npz, save_csv
from ibrobust.studies.price_linear.algorithms import algorithm_label, regime_label
from ibrobust.studies.price_linear.plots import cosine_vs_fraction, gap_difference_heatmap, gap_vs_n
from ibrobust.studies.price_linear.tables import (
    gap_difference,
    mean_over_draws,
    solution_cosines,
    summary_markdown,
)

p, out = snakemake.params, snakemake.output
reg = p.registry
regimes = {d: regime_label(c) for d, c in reg["datasets"].items()}
labels = {o: algorithm_label(c) for o, c in reg["optimizers"].items()}
first, second = reg["gap_difference"]


def files(prefix: str) -> SimpleNamespace:
    """The (png, pdf, csv) outputs of one figure."""
    return SimpleNamespace(**{ext: out[f"{prefix}_{ext}"] for ext in ("png", "pdf", "csv")})


def solutions(path: str) -> dict[str, dict[str, np.ndarray]]:
    """One (regime, n) job's weights.npz as optimizer -> {w, draw, eps_fraction}."""
    z = load_npz(path)
    return {str(o): {"w": z["w"][i], "draw": z["draw"], "eps_fraction": z["eps_fraction"]}
            for i, o in enumerate(z["optimizer"])}  # fmt: skip


with Job(snakemake) as job:
    df = gather_csv(list(snakemake.input.metrics), p.runs)
    fig = gap_vs_n(df, regimes, labels, gap="robust_gap", spread=p.plots["spread"],
                   style=p.plots["style"])  # fmt: skip
    save_outputs(job, fig, df, files("gap"), p.plots["dpi"])

    for gap in ("robust", "clean"):
        table = gap_difference(df, first, second, gap=f"{gap}_gap")
        table.insert(2, "gap", f"{gap}_gap")
        table.insert(3, "first", first)
        table.insert(4, "second", second)
        for r in table.itertuples():
            job.log.info("%s eps=%.2f: mean %s_gap(%s) - %s_gap(%s) = %+.3f",
                         r.dataset, r.eps_fraction, gap, first, gap, second, r.difference)  # fmt: skip
        fig = gap_difference_heatmap(table, regimes, first=first, second=second, labels=labels,
                                     gap=f"{gap}_gap", cmap=p.plots["cmap"])  # fmt: skip
        save_outputs(job, fig, table, files(gap), p.plots["dpi"])

    frames = []
    for path, run in zip(snakemake.input.weights, p.runs, strict=True):
        cos = solution_cosines(solutions(path))
        cos.insert(0, "dataset", run["dataset"])
        cos.insert(1, "n", run["n"])
        frames.append(cos)
    cosines = pd.concat(frames, ignore_index=True)
    for (a, b, f), c in cosines.groupby(["optimizer_a", "optimizer_b", "eps_fraction"]).cosine:
        job.log.info("cos(%s, %s) at eps=%.2f gamma*: mean %.3f", a, b, f, c.mean())
    fig = cosine_vs_fraction(cosines, regimes, labels, spread=p.plots["spread"],
                             style=p.plots["style"])  # fmt: skip
    save_outputs(job, fig, cosines, files("cosines"), p.plots["dpi"])

    save_csv(out.summary_csv, mean_over_draws(df))
    md = summary_markdown(df, cosines, first=first, second=second, dataset_labels=regimes,
                          optimizer_labels=labels)  # fmt: skip
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(md + "\n")
    job.log.info("summary:\n%s", md)
    for f in (out.summary_csv, out.summary_md):
        job.artifact(f, "tables")
