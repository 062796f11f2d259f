"""Rule decide_plan: the plan of `snakemake decide` (ibrobust.decide.planner) for the ledger,
within decide.budget_cpu_s, from the measured cost per unit; written as a config overlay
(results/decide/look<k>/plan.yaml), its rows (plan.csv) and a readable table (plan.md)."""

import yaml
from _job import Job

from ibrobust.decide.cost import read_cost_model
from ibrobust.decide.planner import PlanSettings, overlay, plan_units
from ibrobust.decide.spending import spending
from ibrobust.decide.tables import apply_command, plan_markdown
from ibrobust.decide.units import unit_keys
from ibrobust.io import atomic_path, save_csv
from ibrobust.ledger.render import read_ledger

p, inp, out = snakemake.params, snakemake.input, snakemake.output
d = p.decide
with Job(snakemake) as job:
    lengths = {k.name: len(k.values) for s, b in p.studies.items() for k in unit_keys(s, b)}
    cost = read_cost_model(inp.profile, inp.unit_jobs, lengths)
    settings = PlanSettings(float(d["budget_cpu_s"]), int(d["max_units"]), float(d["target"]))
    spend = spending(float(p.level), d["ci_method"], float(d["spending_power"]))
    plan = plan_units(read_ledger(inp.ledger), p.studies, cost, spend, d["looks"], settings)
    config_overlay = overlay(plan, p.studies, d["looks"], d["predicted_cpu_s"])
    with atomic_path(out.yaml) as tmp:
        tmp.write_text(
            "# snakemake decide's plan (a config overlay): apply it with\n"
            f"#   {apply_command(out.yaml)}\n"
            + yaml.safe_dump(config_overlay, sort_keys=False, default_flow_style=None)
        )
    save_csv(out.csv, plan.rows)
    with atomic_path(out.md) as tmp:
        tmp.write_text(plan_markdown(plan, str(inp.ledger)))
    added = {r.key: r.added for r in plan.keys.itertuples() if r.added}
    job.log.info(
        "plan: %s; predicted %.0f CPU-s of %.0f", added or "nothing", plan.predicted_cpu_s,
        settings.budget_cpu_s,
    )  # fmt: skip
    job.metrics({"decide.predicted_cpu_s": plan.predicted_cpu_s})
    for f in (out.yaml, out.md, out.csv):
        job.artifact(f, "decide")
