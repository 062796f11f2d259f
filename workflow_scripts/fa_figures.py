"""Rule fa_figures: Study FA's common figures and table, one job: the cosine heatmaps of
neurons vs class features (first seed; paper Fig. 1), robust accuracy vs radius (2-class,
k-class under each binary readout, the robust reference), and the summary (critical radii,
clean accuracy, averaging index and coefficients per setting and readout; 2-class and
reference nets have one score, so their rows repeat under each readout)."""

from types import SimpleNamespace

import pandas as pd
from _figures import gather_csv, gather_json, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.plotting.cosines import cosine_heatmaps
from ibrobust.stages.tables import mean_std, per_readout
from ibrobust.studies.feature_averaging.plots import robust_curves

p, out = snakemake.params, snakemake.output
inp = snakemake.input


def files(prefix: str) -> SimpleNamespace:
    return SimpleNamespace(**{ext: out[f"{prefix}_{ext}"] for ext in ("png", "pdf", "csv")})


def summary() -> pd.DataFrame:
    labels = p.model_labels  # model -> its kind's label (None: named by its supervision)
    att = gather_json(list(inp.attack), p.attack_runs)
    key_of = lambda r: tuple(r[k] for k in ("dataset", "model", "optimizer", "supervision", "seed"))  # noqa: E731
    ana = {key_of(r): r for r in gather_json(list(inp.analysis), p.analysis_runs)}
    dec = {key_of(r): r for r in gather_json(list(inp.decomposition), p.decomposed_runs)}
    rows = []
    for r in att:
        key = key_of(r)
        row = {
            "dataset": r["dataset"], "model": r["model"], "optimizer": r["optimizer"],
            "seed": r["seed"], "readout": r["readout"],
            "setting": labels[r["model"]] or r["supervision"], "clean_acc": r["clean_acc"],
        }  # fmt: skip
        row.update({f"critical_radius.{a}": v for a, v in r["critical_radius"].items()})
        if key in dec:
            row.update(
                fa_index=dec[key]["fa_index_final"],
                other_class_ratio=dec[key].get("other_class_ratio_final", float("nan")),
                residual_max=dec[key]["residual_max"],
            )
        if key in ana:
            row["cosine_same_class_mean"] = ana[key]["cosine_same_class_mean"]
        rows.append(row)
    return per_readout(pd.DataFrame(rows), list(p.readouts))


with Job(snakemake) as job:
    cos = gather_csv(list(inp.cosine), p.cosine_runs)
    fig = cosine_heatmaps(cos, cmap=p.plots["cmap"], style=p.plots["style"])
    save_outputs(job, fig, cos, files("cosine"), p.plots["dpi"])

    curves = per_readout(gather_csv(list(inp.curves), p.attack_runs), list(p.readouts))
    curves["model_kind"] = curves.model.map(p.model_kinds)
    ds = next(iter(p.datasets.values()))
    fig = robust_curves(curves, p.model_labels, d=ds["d"], k=ds["k"],
                        spread=p.plots["spread"], style=p.plots["style"])  # fmt: skip
    save_outputs(job, fig, curves, files("robust"), p.plots["dpi"])

    table = summary()
    num = [c for c in table.columns
           if c.startswith(("critical", "clean", "fa_", "other_", "residual", "cosine"))]  # fmt: skip
    agg = mean_std(table, ["dataset", "model", "optimizer", "readout", "setting"], num)
    save_csv(out.summary_csv, table)
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(
            "# Summary (mean and std over seeds; n = seeds)\n\n"
            "critical_radius.worst = the worst case over the attacks of that readout; 2-class "
            "and reference nets have one score, so their rows repeat under each readout.\n\n"
            + agg.round(3).to_markdown(index=False)
            + "\n"
        )
    job.log.info("summary:\n%s", agg.round(3).to_string(index=False))
    for f in (out.summary_csv, out.summary_md):
        job.artifact(f, "tables")
