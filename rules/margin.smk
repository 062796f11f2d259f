# Study MARGIN (kind margin; package ibrobust.studies.margin): gradient descent maximizes the
# normalized margin of homogeneous nets (Lyu & Li, ICLR 2020). Jobs: the generic dataset rule
# (rules/data.smk: seeded image subsets or cluster draws), one loss-based training job per
# (dataset, model, seed) writing its checkpoints and per-epoch history, with training.flow a
# constant-step one beside it (<run>/constant/), one robustness job per loss-based run (every
# checkpoint: FAB minimal distances, PGD-bisection cross-check, certificate), one KKT-residual
# job per run of either schedule, then one job for the study's figures and tables. Adding a seed
# adds only its own jobs (and reruns that one).
from ibrobust.studies import margin as _margin  # noqa: E402

MARGIN_STUDIES = studies_of("margin")
MARGIN_WILDCARDS = dict(
    dataset=alternatives({d for s in MARGIN_STUDIES for d in STUDIES[s]["datasets"]}) or NO_MATCH,
    model=alternatives({m for s in MARGIN_STUDIES for m in STUDIES[s]["models"]}) or NO_MATCH,
    seed=r"\d+",
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
        device=DEVICE,
        code=lambda w: code("margin_train", kind_module("models", w.model)),
    threads: config["threads"]
    # the longest single jobs of a run (~15 min of one core on 1000 images): started first, so
    # that a 2-core run does not end on them with a core idle (issue 28, packing)
    priority: 50
    resources:
        mem_mb=4000,
        runtime=120,
        gpu=GPU_JOB,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_train.py"


# the constant-step arm (training.flow): full-batch GD at one lr from the loss-based run's init
rule margin_flow:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
    output:
        history=f"{MARGIN_RUN}/constant/history.csv",
        checkpoints=f"{MARGIN_RUN}/constant/checkpoints.pt",
        table=f"{MARGIN_RUN}/constant/checkpoints.csv",
        meta=f"{MARGIN_RUN}/constant/train.json",
    log:
        "results/logs/margin_flow/{study}/{dataset}/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/margin_flow/{study}/{dataset}/{model}/seed{seed}.tsv"
    wildcard_constraints:
        dataset=MARGIN_WILDCARDS["dataset"],
        model=MARGIN_WILDCARDS["model"],
        seed=MARGIN_WILDCARDS["seed"],
    params:
        flow=lambda w: _margin.flow(config, STUDIES[w.study], w.model),
        seed=lambda w: int(w.seed),
        device=DEVICE,
        code=lambda w: code("margin_flow", kind_module("models", w.model)),
    threads: config["threads"]
    priority: 50  # minutes of one core, as margin_train's
    resources:
        mem_mb=2000,
        runtime=60,
        gpu=GPU_JOB,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_flow.py"


# per checkpoint of a loss-based run, the KKT residual (its constant-step twin below); a job of
# its own so that a change to it reruns seconds of work, not the training
rule margin_kkt:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        checkpoints=f"{MARGIN_RUN}/checkpoints.pt",
    output:
        kkt=f"{MARGIN_RUN}/kkt.csv",
    log:
        "results/logs/margin_kkt/{study}/{dataset}/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/margin_kkt/{study}/{dataset}/{model}/seed{seed}.tsv"
    wildcard_constraints:
        dataset=MARGIN_WILDCARDS["dataset"],
        model=MARGIN_WILDCARDS["model"],
        seed=MARGIN_WILDCARDS["seed"],
    params:
        model=lambda w: config["models"][w.model],
        supervision=lambda w: STUDIES[w.study]["supervision"],
        seed=lambda w: int(w.seed),
        code=lambda w: code("margin_kkt", kind_module("models", w.model)),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_kkt.py"


use rule margin_kkt as margin_kkt_constant with:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        checkpoints=f"{MARGIN_RUN}/constant/checkpoints.pt",
    output:
        kkt=f"{MARGIN_RUN}/constant/kkt.csv",
    log:
        "results/logs/margin_kkt/{study}/{dataset}/{model}/seed{seed}.constant.log",
    benchmark:
        "results/benchmarks/margin_kkt/{study}/{dataset}/{model}/seed{seed}.constant.tsv"


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
        device=DEVICE,
        code=lambda w: code("margin_robustness", kind_module("models", w.model)),
    threads: config["threads"]
    priority: 50  # the next longest (as margin_train's)
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=GPU_JOB,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_robustness.py"


# the study's figures and tables, one job (seconds of work): every figure, summary.csv/.md,
# checkpoints.csv, attack_audit.csv, points.csv and schedules.csv. A figure option reruns this
# job only; a new seed adds its own training, robustness and KKT jobs, then reruns this one.
# localrules: it runs in the Snakemake process's own machine even under --profile
# profiles/slurm (no sbatch for it)
localrules: margin_figures


rule margin_figures:
    input:
        unpack(lambda w: _margin.figures_inputs(w.study, STUDIES[w.study])),
    output:
        margins_png=report("results/{study}/figures/margins.png", caption="../report/margin/margins.rst", category="{study}", subcategory="figures"),
        margins_pdf="results/{study}/figures/margins.pdf",
        margins_csv="results/{study}/figures/margins.csv",
        loss_png=report("results/{study}/figures/loss.png", caption="../report/margin/loss.rst", category="{study}", subcategory="figures"),
        loss_pdf="results/{study}/figures/loss.pdf",
        loss_csv="results/{study}/figures/loss.csv",
        robust_png=report("results/{study}/figures/robust_accuracy.png", caption="../report/margin/robust_accuracy.rst", category="{study}", subcategory="figures"),
        robust_pdf="results/{study}/figures/robust_accuracy.pdf",
        robust_csv="results/{study}/figures/robust_accuracy.csv",
        distance_png=report("results/{study}/figures/distance_vs_margin.png", caption="../report/margin/distance_vs_margin.rst", category="{study}", subcategory="figures"),
        distance_pdf="results/{study}/figures/distance_vs_margin.pdf",
        distance_csv="results/{study}/figures/distance_vs_margin.csv",
        summary_csv="results/{study}/figures/summary.csv",
        summary_md="results/{study}/figures/summary.md",
        checkpoints="results/{study}/figures/checkpoints.csv",
        audit="results/{study}/figures/attack_audit.csv",
        points="results/{study}/figures/points.csv",
        # per seed, both schedules' losses at the constant-step run's last epoch (header only
        # without training.flow; the study's outputs, and so the ledger, list it only with it)
        schedules="results/{study}/figures/schedules.csv",
    log:
        "results/logs/figures/{study}/margin.log",
    params:
        runs=lambda w: _margin.runs(STUDIES[w.study]),
        flow=lambda w: _margin.has_flow(STUDIES[w.study]),
        radii=lambda w: STUDIES[w.study]["robustness"]["radii"],
        plots=plot_params,
        code=code("margin_figures"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/margin_figures.py"
