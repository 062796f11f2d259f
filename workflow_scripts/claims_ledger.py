"""Rules claims / claims_all / claims_scale: the claims ledger (claims.md, .csv, .html) from
the studies' outputs, every verdict decided on a ``level`` interval, and its figure (each
claim's interval against its rule); for a scale ladder's rungs also each claim's trend over
them (trend.md, .csv)."""

from _job import Job

from ibrobust.io import atomic_path, save_csv
from ibrobust.ledger.render import ledger_html, ledger_markdown
from ibrobust.ledger.table import build_ledger, study_outputs
from ibrobust.ledger.trend import trend_markdown, trends
from ibrobust.plotting.claims import save_claims_figure
from ibrobust.studies.expansion import Rung

p = snakemake.params
with Job(snakemake) as job:
    studies = study_outputs(p.config, provided=list(snakemake.input))
    ledger = build_ledger(studies, level=float(p.level), revised=dict(p.revised))
    save_csv(snakemake.output.csv, ledger)
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(ledger_markdown(ledger))
    with atomic_path(snakemake.output.html) as tmp:
        tmp.write_text(ledger_html(ledger))
    save_claims_figure(ledger, snakemake.output.png, snakemake.output.pdf)
    counts = ledger.verdict.value_counts().to_dict()
    job.log.info("%d claims: %s", len(ledger), counts)
    job.metrics({f"claims.{v.replace(' ', '_')}": float(n) for v, n in counts.items()})
    out = snakemake.output
    files = [out.md, out.csv, out.html, out.png, out.pdf]
    if "trend_csv" in out.keys():  # the scale ledger: each claim's trend over the rungs
        table = trends(ledger, {s: Rung(**r) for s, r in p.rungs.items()})
        save_csv(out.trend_csv, table)
        with atomic_path(out.trend_md) as tmp:
            tmp.write_text(trend_markdown(table))
        job.log.info("trends: %s", table.trend.value_counts().to_dict())
        files += [out.trend_md, out.trend_csv]
    for f in files:
        job.artifact(f, "claims")
