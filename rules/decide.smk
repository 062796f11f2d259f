# `snakemake decide` (ibrobust.decide; docs/operations.md, "Deciding more rows"): spend a CPU
# budget where it settles the ledger's inconclusive and fragile rows, every look judged at its
# spent level (decide.ci_method). Two invocations, because Snakemake fixes the config - and so
# every study's seed and draw lists, from which its jobs are built - when it parses the
# workflow: a plan written during a run cannot add jobs to it (a checkpoint re-evaluates input
# functions, not the studies' config that their params and paths are built from).
#   1. snakemake decide                                    -> results/decide/look2/plan.{yaml,md,csv}
#   2. snakemake decide --configfile results/decide/look2/plan.yaml -> the added units as the studies'
#      ordinary jobs (the extended studies' outputs: Snakemake runs what the new units touch),
#      and the ledger rebuilt from all units with its looks (results/decide/look2/); the studies no
#      plan extended are read from their outputs where they exist (after `reproduce`), else
#      "not run"
# With the plan applied, --config decide='{dry: true}' writes the next look's plan only (over the
# ledger of this look, which it builds first).
from ibrobust.decide.units import study_look  # noqa: E402
from ibrobust.ledger.table import claims_modules, ledger_inputs  # noqa: E402

DECIDE = config["decide"]
# a relative path of the decide block: in the working directory, else in the checkout (the
# committed profile, unit-jobs table and ledger, when Snakemake runs elsewhere with -d)
_checkout_path = lambda p: p if os.path.isabs(p) or os.path.exists(p) else os.path.join(workflow.basedir, p)
# the plan of the next look lands in its own folder: look<k>/ for the k-th entry of
# decide.looks it adds (the first plan: look2/), never over the overlay applied now
DECIDE_NEXT = max(len(DECIDE["looks"]), 1) + 1
DECIDE_PLAN = [f"results/decide/look{DECIDE_NEXT}/plan.{ext}" for ext in ("yaml", "md", "csv")]
DECIDE_APPLIED = f"results/decide/look{len(DECIDE['looks'])}/plan.yaml"  # when looks are set
# the ledger of the look applied now, beside its plan (each look keeps its own)
_LOOK_DIR = f"results/decide/look{len(DECIDE['looks'])}"
DECIDE_LEDGER = [f"{_LOOK_DIR}/claims.{ext}" for ext in ("csv", "md", "html")] + [
    f"{_LOOK_DIR}/looks.csv",
    f"{_LOOK_DIR}/look.md",
]


# the ledger the plan reads: decide.ledger, else this look's (a plan applied), else the
# reproduce ledger when built, else the committed one
_REPRODUCE_LEDGER = "results/claims/all/claims.csv"
DECIDE_LEDGER_INPUT = _checkout_path(DECIDE["ledger"]) if DECIDE["ledger"] else (
    DECIDE_LEDGER[0] if DECIDE["looks"]
    else _REPRODUCE_LEDGER if os.path.exists(_REPRODUCE_LEDGER)
    else _checkout_path("docs/ledger/current.csv")
)  # fmt: skip
# the studies whose unit lists a plan extended (their look is past the first)
DECIDED_STUDIES = [s for s in BASE_STUDIES if study_look(DECIDE["looks"], s) > 1]


# what the look's ledger reads: those outputs of the extended studies (their new units' jobs
# and the aggregates those touch), and the other studies' outputs where they exist (a study
# never built here reads "not run: output absent" in it)
DECIDE_LEDGER_FILES = sorted(
    {f for s in DECIDED_STUDIES for f in decided_outputs(s)}
    | {f for s in BASE_STUDIES if s not in DECIDED_STUDIES for f in study_outputs(s)
       if os.path.exists(f)}
)  # fmt: skip
DECIDE_TARGETS = (
    DECIDE_PLAN if DECIDE["dry"] or not DECIDE["looks"]
    else [f for s in DECIDED_STUDIES for f in decided_outputs(s)] + DECIDE_LEDGER
)  # fmt: skip


localrules: decide_plan, decide_ledger


rule decide_plan:
    input:
        ledger=DECIDE_LEDGER_INPUT,
        profile=_checkout_path(DECIDE["profile"]),
        unit_jobs=_checkout_path(DECIDE["unit_jobs"]),
    output:
        yaml=DECIDE_PLAN[0],
        md=DECIDE_PLAN[1],
        csv=DECIDE_PLAN[2],
    log:
        "results/logs/decide/decide_plan.log",
    params:
        studies=lambda w: {s: STUDIES[s] for s in BASE_STUDIES},
        decide=DECIDE,
        level=config["ledger"]["level"],
        code=code("decide_plan"),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/decide_plan.py"


rule decide_ledger:
    input:
        ledger_inputs({s: STUDIES[s]["kind"] for s in BASE_STUDIES}, DECIDE_LEDGER_FILES),
    output:
        csv=DECIDE_LEDGER[0],
        md=DECIDE_LEDGER[1],
        html=DECIDE_LEDGER[2],
        looks=DECIDE_LEDGER[3],
        look=DECIDE_LEDGER[4],
    log:
        "results/logs/decide/decide_ledger.log",
    params:
        config=lambda w: dict(ledger_config(BASE_STUDIES), only_studies=BASE_STUDIES),
        decide=DECIDE,
        level=config["ledger"]["level"],
        revised=REVISED,
        # the plan whose jobs this look ran (their CPU-s: the job logs written since it)
        plan=DECIDE_APPLIED,
        code=code("decide_ledger", *claims_modules().values(), *kind_modules("optimizers", config["optimizers"])),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/decide_ledger.py"


rule decide:
    input:
        DECIDE_TARGETS,
