"""Rule price_cosine_figure: cosines between the algorithms' solutions on the same problems
vs eps / gamma* (they should approach 1 as eps -> gamma*, paper Lemma C.4)."""

import pandas as pd
from _figures import save_outputs
from _job import Job

from ibrobust.io import load_npz
from ibrobust.studies.price_linear.algorithms import algorithm_label, regime_label
from ibrobust.studies.price_linear.plots import cosine_vs_fraction
from ibrobust.studies.price_linear.tables import solution_cosines

p = snakemake.params
with Job(snakemake) as job:
    groups: dict[tuple[str, int], dict] = {}
    for path, run in zip(snakemake.input, p.runs, strict=True):
        groups.setdefault((run["dataset"], run["n"]), {})[run["optimizer"]] = load_npz(path)
    frames = []
    for (dataset, n), solutions in groups.items():
        cos = solution_cosines(solutions)
        cos.insert(0, "dataset", dataset)
        cos.insert(1, "n", n)
        frames.append(cos)
    table = pd.concat(frames, ignore_index=True)
    reg = p.registry
    labels = {o: algorithm_label(c) for o, c in reg["optimizers"].items()}
    for (a, b, f), c in table.groupby(["optimizer_a", "optimizer_b", "eps_fraction"]).cosine:
        job.log.info("cos(%s, %s) at eps=%.2f gamma*: mean %.3f", a, b, f, c.mean())
    fig = cosine_vs_fraction(
        table,
        {d: regime_label(c) for d, c in reg["datasets"].items()},
        labels,
        spread=p.plots["spread"],
        style=p.plots["style"],
    )
    save_outputs(job, fig, table, snakemake.output, p.plots["dpi"])
