"""Rule attack_audit_table: each attack's critical radius against the exact radii."""

from _figures import gather_json
from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.studies.attack_audit import summarize

p = snakemake.params
with Job(snakemake) as job:
    table, agg = summarize(gather_json(list(snakemake.input), p.runs), p.tolerance)
    save_csv(snakemake.output.csv, table)
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(
            f"# Attack audit (critical radius vs the exact median radius; passes: gap <= "
            f"{p.tolerance:g} for every seed)\n\n" + agg.round(3).to_markdown(index=False) + "\n"
        )
    job.log.info("audit:\n%s", agg.round(3).to_string(index=False))
    for f in (snakemake.output.csv, snakemake.output.md):
        job.artifact(f, "tables")
