"""Rule decide_ledger: the ledger after a look of `snakemake decide`, every study's rows
judged at its look's spent level (ibrobust.decide.looks), with the units at each look, the
deciding look and the CPU-s spent (claims.csv, .md, .html), the looks record (looks.csv)
and the look's outcome: predicted beside measured CPU-s, verdicts at look 1 and now
(look.md)."""

from pathlib import Path

import pandas as pd
from _job import Job

from ibrobust.decide.looks import (
    evaluate_looks,
    job_cpu,
    looks_html,
    looks_markdown,
    looks_rows,
    with_looks,
)
from ibrobust.decide.spending import spending
from ibrobust.decide.tables import cpu_by_study, look_summary
from ibrobust.io import atomic_path, save_csv
from ibrobust.ledger.render import ledger_html, ledger_markdown
from ibrobust.ledger.table import ledger_table, study_outputs

p, out = snakemake.params, snakemake.output
d = p.decide
with Job(snakemake) as job:
    spend = spending(float(p.level), d["ci_method"], float(d["spending_power"]))
    rows, records = [], []
    studies = study_outputs(p.config, provided=list(snakemake.input))
    for so in studies:
        now, looks = evaluate_looks(so, d["looks"], spend)
        rows, records = rows + now, records + looks
    table = pd.DataFrame(records)
    # as the claims ledger: one verdict per claim, the revised-after-the-result notes
    ledger = with_looks(ledger_table(rows, studies, dict(p.revised)), table, d["predicted_cpu_s"])
    save_csv(out.csv, ledger)
    save_csv(out.looks, table)
    shown = looks_rows(ledger, table)
    with atomic_path(out.md) as tmp:
        tmp.write_text(ledger_markdown(ledger) + "\n" + looks_markdown(shown))
    with atomic_path(out.html) as tmp:
        tmp.write_text(ledger_html(ledger).replace("</body>", looks_html(shown) + "</body>"))
    # measured: the CPU-s of every job whose log was written since the plan (this look's)
    plan = Path(p.plan)
    since = plan.stat().st_mtime if plan.exists() else None
    logs = [f for f in Path("results/logs").rglob("*.log") if since and f.stat().st_mtime > since]
    jobs = [(str(f), job_cpu(f.read_text(errors="replace"))) for f in logs
            if f != Path(snakemake.log[0])]  # fmt: skip
    measured = cpu_by_study(jobs, p.config["studies"]) if since else None
    first = table[table.look == 1].assign(fragile="")
    with atomic_path(out.look) as tmp:
        tmp.write_text(look_summary(first, ledger, d["predicted_cpu_s"], measured))
    job.log.info("looks: %d records; measured CPU-s since the plan: %s", len(table), measured)
    for f in (out.csv, out.md, out.html, out.looks, out.look):
        job.artifact(f, "decide")
