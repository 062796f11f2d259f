# The claims ledger (results/claims/claims.md + .csv): every claim each study kind declares
# (src/ibrobust/studies/<kind>/claims.py), measured on the studies' summaries. It reads only the summaries the
# default target builds for the invocation's studies (only_studies, else the enabled ones;
# claims of other outputs and studies are "not run", with the reason); editing a claim declaration changes only this rule's code hash, so only the
# ledger reruns.
from ibrobust.ledger.prereg import RECORD, revised_notes  # noqa: E402

# the committed pre-registration record, in the checkout (also when Snakemake runs with -d)
REVISED = revised_notes(os.path.join(workflow.basedir, RECORD))
from ibrobust.ledger.sensitivity import base_name  # noqa: E402
from ibrobust.ledger.table import claims_modules, ledger_inputs  # noqa: E402

# the sibling studies of the sweep overlays loaded (configs/sweep_*.yaml: <base>__<tag>);
# with only_studies, those of them it names (a sweep run in parts)
SWEEP_SIBLINGS = [s for s in (config["only_studies"] or BASE_STUDIES) if base_name(s) is not None]
CLAIMS_LEDGER_SWEEP = [f"results/claims/sweep/claims.{ext}" for ext in ("md", "csv", "html", "png", "pdf")]

# the ledger also goes onto the invocation's parent MLflow run (folder claims/)
PARENT_ARTIFACTS.update(
    {f: "claims" for f in CLAIMS_LEDGER + CLAIMS_LEDGER_ALL + CLAIMS_LEDGER_SCALE + SCALE_TRENDS}
)


# figures, tables and the ledger: seconds of work each, so they run in the Snakemake
# process's own machine even under --profile profiles/slurm (no sbatch per figure)
localrules: claims, claims_all, claims_scale, claims_sweep


rule claims:
    input:
        ledger_inputs({s: STUDIES[s]["kind"] for s in ENABLED if s in BASE_STUDIES},
                      {f for s in ENABLED for f in study_outputs(s, default=True)}),
    output:
        html=report("results/claims/claims.html", caption="../report/claims/claims.rst", category="0 claims ledger"),
        md="results/claims/claims.md",
        csv="results/claims/claims.csv",
        png="results/claims/claims.png",
        pdf="results/claims/claims.pdf",
    log:
        "results/logs/claims/claims.log",
    params:
        # the config the claims read (params, not snakemake.config: declared, so reruns see it)
        config=lambda w: ledger_config(BASE_STUDIES),
        level=config["ledger"]["level"],
        # the committed pre-registration record's notes (docs/ledger/preregistration.csv,
        # `ibrobust claims prereg`): a row whose rule changed after its number was known
        revised=REVISED,
        # the claim declarations and the optimizer kinds they read (PRICE-LIN's algorithms)
        code=code("claims_ledger", *claims_modules().values(), *kind_modules("optimizers", config["optimizers"])),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/claims_ledger.py"


# The full ledger of `snakemake reproduce` (rules/targets.smk): every study of the config, all
# its outputs (enabled or not: only_studies = every study).
use rule claims as claims_all with:
    input:
        ledger_inputs({s: STUDIES[s]["kind"] for s in BASE_STUDIES},
                      {f for s in BASE_STUDIES for f in study_outputs(s)}),
    output:
        html=report("results/claims/all/claims.html", caption="../report/claims/claims.rst", category="0 claims ledger"),
        md="results/claims/all/claims.md",
        csv="results/claims/all/claims.csv",
        png="results/claims/all/claims.png",
        pdf="results/claims/all/claims.pdf",
    log:
        "results/logs/claims/claims_all.log",
    params:
        config=lambda w: dict(ledger_config(BASE_STUDIES), only_studies=BASE_STUDIES),
        level=config["ledger"]["level"],
        revised=REVISED,
        code=code("claims_ledger", *claims_modules().values(), *kind_modules("optimizers", config["optimizers"])),


# The ledger of `snakemake scale` (rules/targets.smk): every rung study of every scale ladder
# (all its outputs), and each claim's trend over the rungs (ibrobust.ledger.trend).
use rule claims as claims_scale with:
    input:
        ledger_inputs({s: STUDIES[s]["kind"] for s in SCALE_RUNGS},
                      {f for s in SCALE_RUNGS for f in study_outputs(s)}),
    output:
        html="results/claims/scale/claims.html",
        md="results/claims/scale/claims.md",
        csv="results/claims/scale/claims.csv",
        png="results/claims/scale/claims.png",
        pdf="results/claims/scale/claims.pdf",
        trend_md="results/claims/scale/trend.md",
        trend_csv="results/claims/scale/trend.csv",
    log:
        "results/logs/claims/claims_scale.log",
    params:
        config=lambda w: dict(ledger_config(list(SCALE_RUNGS)), only_studies=list(SCALE_RUNGS)),
        rungs={s: vars(r) for s, r in SCALE_RUNGS.items()},
        level=config["ledger"]["level"],
        revised=REVISED,
        code=code("claims_ledger", *claims_modules().values(), *kind_modules("optimizers", config["optimizers"])),


# The ledger of the sweep siblings of the overlays loaded (`snakemake --configfile
# configs/sweep_<kind>.yaml -- claims_sweep`; `--config only_studies=[a,b]` for some of them): each sibling judged like any study (all its
# outputs); `ibrobust claims sweep` compares it with the base ledger
# (ibrobust.ledger.sensitivity).
use rule claims as claims_sweep with:
    input:
        ledger_inputs({s: STUDIES[s]["kind"] for s in SWEEP_SIBLINGS},
                      {f for s in SWEEP_SIBLINGS for f in study_outputs(s)}),
    output:
        html="results/claims/sweep/claims.html",
        md="results/claims/sweep/claims.md",
        csv="results/claims/sweep/claims.csv",
        png="results/claims/sweep/claims.png",
        pdf="results/claims/sweep/claims.pdf",
    log:
        "results/logs/claims/claims_sweep.log",
    params:
        config=lambda w: dict(ledger_config(SWEEP_SIBLINGS), only_studies=SWEEP_SIBLINGS),
        level=config["ledger"]["level"],
        code=code("claims_ledger", *claims_modules().values(), *kind_modules("optimizers", config["optimizers"])),
