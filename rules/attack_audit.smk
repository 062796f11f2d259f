# Attack audit (kind attack_audit; package ibrobust.studies.attack_audit): each attack's
# critical radius on the hand-built robust reference against its exact radii. The reference
# and its attack jobs come from the generic network rules (train builds it, attack runs the
# study's attacks and records the exact radii); this file adds the audit table.
from ibrobust.studies import attack_audit as _audit  # noqa: E402


# figures, tables and the ledger: seconds of work each, so they run in the Snakemake
# process's own machine even under --profile profiles/slurm (no sbatch per figure)
localrules: attack_audit_table


rule attack_audit_table:
    input:
        lambda w: files(w.study, main_runs(w.study), "attack/main/summary.json"),
    output:
        csv="results/{study}/figures/summary.csv",
        md="results/{study}/figures/summary.md",
    log:
        "results/logs/figures/{study}/summary.log",
    params:
        runs=lambda w: main_runs(w.study),
        tolerance=lambda w: float(STUDIES[w.study]["tolerance"]),
        code=code("attack_audit_table"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/attack_audit_table.py"
