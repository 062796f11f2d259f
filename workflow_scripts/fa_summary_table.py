"""Rule fa_summary_table: critical radii, clean accuracy and averaging index per setting and
binary readout (2-class and reference nets, with one score, repeat under each readout)."""

import pandas as pd
from _figures import gather_json
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.stages.tables import mean_std, per_readout

p = snakemake.params
with Job(snakemake) as job:
    labels = p.model_labels  # model -> its kind's label (None: named by its supervision)
    att = gather_json(list(snakemake.input.attack), p.attack_runs)
    key_of = lambda r: tuple(r[k] for k in ("dataset", "model", "optimizer", "supervision", "seed"))  # noqa: E731
    ana = {key_of(r): r for r in gather_json(list(snakemake.input.analysis), p.analysis_runs)}
    dec = {
        key_of(r): r for r in gather_json(list(snakemake.input.decomposition), p.decomposed_runs)
    }
    rows = []
    for r in att:
        key = key_of(r)
        row = {
            "dataset": r["dataset"],
            "model": r["model"],
            "optimizer": r["optimizer"],
            "seed": r["seed"],
            "readout": r["readout"],
            "setting": labels[r["model"]] or r["supervision"],
            "clean_acc": r["clean_acc"],
        }
        row.update({f"critical_radius.{a}": v for a, v in r["critical_radius"].items()})
        if key in dec:
            row.update(fa_index=dec[key]["fa_index_final"], residual_max=dec[key]["residual_max"])
        if key in ana:
            row["cosine_same_class_mean"] = ana[key]["cosine_same_class_mean"]
        rows.append(row)
    table = per_readout(pd.DataFrame(rows), list(p.readouts))
    num = [
        c for c in table.columns if c.startswith(("critical", "clean", "fa_", "residual", "cosine"))
    ]
    agg = mean_std(table, ["dataset", "model", "optimizer", "readout", "setting"], num)
    save_csv(snakemake.output.csv, table)
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(
            "# Summary (mean and std over seeds; n = seeds)\n\n"
            "critical_radius.worst = the worst case over the attacks of that readout; 2-class "
            "and reference nets have one score, so their rows repeat under each readout.\n\n"
            + agg.round(3).to_markdown(index=False)
            + "\n"
        )
    job.log.info("summary:\n%s", agg.round(3).to_string(index=False))
    for f in (snakemake.output.csv, snakemake.output.md):
        job.artifact(f, "tables")
