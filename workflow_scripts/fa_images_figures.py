"""Rule fa_images_figures: Study FA-IMAGES' figures and table, one job: the cosine heatmaps
(class means of the penultimate embedding, first seed), robust accuracy vs l2 radius per
dataset (2-class vs k-class, one row per binary readout) and the summary (clean and robust
accuracy at the report radii, beside the paper's ResNet-18 numbers)."""

from types import SimpleNamespace

import pandas as pd
from _figures import gather_csv, gather_json, save_outputs
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.plotting.cosines import cosine_heatmaps
from ibrobust.stages.tables import per_readout
from ibrobust.studies.feature_averaging_images.plots import robust_curves_by_dataset
from ibrobust.studies.feature_averaging_images.tables import summary_table

p, out = snakemake.params, snakemake.output
inp = snakemake.input


def files(prefix: str) -> SimpleNamespace:
    return SimpleNamespace(**{ext: out[f"{prefix}_{ext}"] for ext in ("png", "pdf", "csv")})


with Job(snakemake) as job:
    cos = gather_csv(list(inp.cosine), p.cosine_runs)
    fig = cosine_heatmaps(cos, cmap=p.plots["cmap"], style=p.plots["style"])
    save_outputs(job, fig, cos, files("cosine"), p.plots["dpi"])

    curves = per_readout(gather_csv(list(inp.curves), p.attack_runs), list(p.readouts))
    fig = robust_curves_by_dataset(curves, spread=p.plots["spread"], style=p.plots["style"])
    save_outputs(job, fig, curves, files("robust"), p.plots["dpi"])

    train = pd.DataFrame(gather_json(list(inp.train), p.runs))
    table = summary_table(curves, train, p.report_radii, p.paper_tasks)
    save_csv(out.summary_csv, table)
    with atomic_path(out.summary_md) as tmp:
        tmp.write_text(
            "# Summary: robust accuracy of the binary task (mean and std over seeds)\n\n"
            "eps = 0 is the clean accuracy under the attacked readout; worst = the worst case "
            "over the attacks of that readout (2-class nets have one score: their rows repeat "
            "under each readout); paper_resnet18 = Li et al. ICLR 2025, Fig. 2/3 (ResNet-18), "
            "read off the figure.\n\n" + table.round(3).to_markdown(index=False) + "\n"
        )
    job.log.info("summary:\n%s", table.round(3).to_string(index=False))
    for f in (out.summary_csv, out.summary_md):
        job.artifact(f, "tables")
