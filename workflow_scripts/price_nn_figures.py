"""Rule price_nn_figures: accuracy curves, FC table, CNN heatmap, summary and the per-seed
pairs (cells.csv, which the claims read) of Study PRICE-NN."""

import json
from types import SimpleNamespace as NS

import pandas as pd
from _figures import save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.price_nn.plots import accuracy_curves, difference_heatmap
from ibrobust.studies.price_nn.rows import final_rows, history_rows, markdown_table
from ibrobust.studies.price_nn.tables import study_tables

p, inp, out = snakemake.params, snakemake.input, snakemake.output


def read_json(paths):
    return [json.loads(open(f).read()) for f in paths]


with Job(snakemake) as job:
    hist = [pd.read_csv(f) for f in inp.history]
    final = final_rows(p.runs, hist, read_json(inp.metrics), read_json(inp.attack))
    curves = history_rows(p.runs, hist)
    curves = curves[(curves["arch"] == "fc") & (curves["n"] == p.curve_n)]
    fig = accuracy_curves(curves, f"FC net, MNIST 2 vs 7, n = {p.curve_n}: GD vs sign descent")
    save_outputs(
        job,
        fig,
        curves,
        NS(png=out.curves_png, pdf=out.curves_pdf, csv=out.curves_csv),
        p.plots["dpi"],
    )
    tables = study_tables(final)
    diff = tables["cnn_differences"]
    fig = difference_heatmap(diff, "Madry CNN, 10-class MNIST: GD - SD robust test acc. "
                             "(strong attacks, worst case)", "GD - SD (points)")  # fmt: skip
    save_outputs(
        job,
        fig,
        diff,
        NS(png=out.heatmap_png, pdf=out.heatmap_pdf, csv=out.heatmap_csv),
        p.plots["dpi"],
    )
    save_csv(out.fc_csv, tables["fc_table"])
    save_csv(out.summary_csv, tables["differences"])
    save_csv(out.cells_csv, tables["cells"])
    with atomic_path(out.cells_md) as tmp:
        tmp.write_text(markdown_table(tables["cells"]) + "\n")
    with atomic_path(out.fc_md) as tmp:
        tmp.write_text(markdown_table(tables["fc_table"]) + "\n")
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(tables["summary_md"])
    save_csv(out.runs, final)
    for key in ("fc_csv", "fc_md", "summary_csv", "summary_md", "cells_csv", "cells_md", "runs"):
        job.artifact(getattr(out, key), "tables")
    job.log.info("summary:\n%s", tables["summary_md"])
