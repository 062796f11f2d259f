"""Rule claims: the claims ledger (claims.md, .csv, .html) from the studies' outputs, every
verdict decided on a ``level`` interval, and its figure (each claim's interval against its
rule)."""

from _job import Job

from ibrobust.claims.ledger import build_ledger, study_outputs
from ibrobust.claims.render import ledger_html, ledger_markdown
from ibrobust.io import atomic_path, save_csv
from ibrobust.plotting.claims import save_claims_figure

p = snakemake.params
with Job(snakemake) as job:
    studies = study_outputs(p.config, provided=list(snakemake.input))
    ledger = build_ledger(studies, level=float(p.level))
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
    for f in (out.md, out.csv, out.html, out.png, out.pdf):
        job.artifact(f, "claims")
