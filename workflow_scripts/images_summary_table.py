"""Rule images_summary_table: clean and robust accuracy at the report radii, vs the paper."""

import pandas as pd
from _figures import gather_csv, gather_json
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.stages.tables import per_readout
from ibrobust.studies.feature_averaging_images.tables import summary_table

p = snakemake.params
with Job(snakemake) as job:
    curves = per_readout(gather_csv(list(snakemake.input.attack), p.attack_runs), list(p.readouts))
    train = pd.DataFrame(gather_json(list(snakemake.input.train), p.runs))
    table = summary_table(curves, train, p.report_radii, p.paper_tasks)
    save_csv(snakemake.output.csv, table)
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(
            "# Summary: robust accuracy of the binary task (mean and std over seeds)\n\n"
            "eps = 0 is the clean accuracy under the attacked readout; worst = the worst case "
            "over the attacks of that readout (2-class nets have one score: their rows repeat "
            "under each readout); paper_resnet18 = Li et al. ICLR 2025, Fig. 2/3 (ResNet-18), "
            "read off the figure.\n\n" + table.round(3).to_markdown(index=False) + "\n"
        )
    job.log.info("summary:\n%s", table.round(3).to_string(index=False))
    for f in (snakemake.output.csv, snakemake.output.md):
        job.artifact(f, "tables")
