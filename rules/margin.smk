# Study MARGIN (kind margin; package ibrobust.studies.margin): gradient descent maximizes the
# normalized margin of homogeneous nets (Lyu & Li, ICLR 2020). Jobs: the generic dataset rule
# (rules/data.smk: seeded image subsets or cluster draws), one loss-based training job per
# (dataset, model, seed) writing its checkpoints and per-epoch history, one robustness job per
# run (every checkpoint: FAB minimal distances, PGD-bisection cross-check, certificate), then
# the study's figures and summary. Adding a seed adds only its own jobs (and reruns figures).
from ibrobust.studies import margin as _margin  # noqa: E402

MARGIN_STUDIES = studies_of("margin")
MARGIN_WILDCARDS = dict(
    dataset=alternatives({d for s in MARGIN_STUDIES for d in STUDIES[s]["datasets"]}) or NO_MATCH,
    model=alternatives({m for s in MARGIN_STUDIES for m in STUDIES[s]["models"]}) or NO_MATCH,
    seed=r"\d+",
    figure=alternatives(_margin.FIGURES),
)
MARGIN_RUN = "results/{study}/{dataset}/{model}/seed{seed}"


rule margin_train:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
    output:
        history=f"{MARGIN_RUN}/history.csv",
        checkpoints=f"{MARGIN_RUN}/checkpoints.pt",
        table=f"{MARGIN_RUN}/checkpoints.csv",
        meta=f"{MARGIN_RUN}/train.json",
    log:
        "results/logs/margin_train/{study}/{dataset}/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/margin_train/{study}/{dataset}/{model}/seed{seed}.tsv"
    wildcard_constraints:
        dataset=MARGIN_WILDCARDS["dataset"],
        model=MARGIN_WILDCARDS["model"],
        seed=MARGIN_WILDCARDS["seed"],
    params:
        training=lambda w: _margin.training(config, STUDIES[w.study], w.model),
        seed=lambda w: int(w.seed),
        code=lambda w: code("margin_train", kind_module("models", w.model)),
    threads: config["threads"]
    # the longest single jobs of a run (~15 min of one core on 1000 images): started first, so
    # that a 2-core run does not end on them with a core idle (issue 28, packing)
    priority: 50
    resources:
        mem_mb=4000,
        runtime=120,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_train.py"


rule margin_robustness:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        checkpoints=f"{MARGIN_RUN}/checkpoints.pt",
    output:
        points=f"{MARGIN_RUN}/points.csv",
    log:
        "results/logs/margin_robustness/{study}/{dataset}/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/margin_robustness/{study}/{dataset}/{model}/seed{seed}.tsv"
    wildcard_constraints:
        dataset=MARGIN_WILDCARDS["dataset"],
        model=MARGIN_WILDCARDS["model"],
        seed=MARGIN_WILDCARDS["seed"],
    params:
        model=lambda w: config["models"][w.model],
        robustness=lambda w: _margin.robustness(config, STUDIES[w.study]),
        seed=lambda w: int(w.seed),
        code=lambda w: code("margin_robustness", kind_module("models", w.model)),
    threads: config["threads"]
    priority: 50  # the next longest (as margin_train's)
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_robustness.py"


# figures, tables and the ledger: seconds of work each, so they run in the Snakemake
# process's own machine even under --profile profiles/slurm (no sbatch per figure)
localrules: margin_figure, margin_summary


rule margin_figure:
    input:
        unpack(lambda w: _margin.figure_inputs(w.study, STUDIES[w.study], w.figure)),
    output:
        png=report("results/{study}/figures/{figure}.png", caption="../report/margin/figure.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/{figure}.pdf",
        csv="results/{study}/figures/{figure}.csv",
    log:
        "results/logs/figures/{study}/{figure}.log",
    wildcard_constraints:
        figure=MARGIN_WILDCARDS["figure"],
    params:
        runs=lambda w: _margin.runs(STUDIES[w.study]),
        radii=lambda w: STUDIES[w.study]["robustness"]["radii"],
        plots=plot_params,
        code=code("margin_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_figure.py"


rule margin_summary:
    input:
        history=lambda w: _margin.files(w.study, STUDIES[w.study], "history.csv"),
        table=lambda w: _margin.files(w.study, STUDIES[w.study], "checkpoints.csv"),
        points=lambda w: _margin.files(w.study, STUDIES[w.study], "points.csv"),
        meta=lambda w: _margin.files(w.study, STUDIES[w.study], "train.json"),
    output:
        csv="results/{study}/figures/summary.csv",
        md="results/{study}/figures/summary.md",
        checkpoints="results/{study}/figures/checkpoints.csv",
        audit="results/{study}/figures/attack_audit.csv",
        points="results/{study}/figures/points.csv",
    log:
        "results/logs/figures/{study}/summary.log",
    params:
        runs=lambda w: _margin.runs(STUDIES[w.study]),
        radii=lambda w: STUDIES[w.study]["robustness"]["radii"],
        code=code("margin_summary"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_summary.py"
