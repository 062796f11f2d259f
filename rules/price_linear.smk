# Study PRICE-LIN (kind price_linear; package ibrobust.studies.price_linear): robust ERM with
# steepest descent on linear models and GD on diagonal nets (Tsilivis et al. NeurIPS 2024,
# Sec. 5.1). Jobs: the test set per regime; one job per (regime, n) that draws the training
# sets, computes their exact l_inf margins (LP) and runs every algorithm's vectorised robust
# ERM over every draw x eps fraction, recording each run's margin ratio at every decade of its
# train loss (the margin path) (a few CPU-seconds each: one job rather than one per algorithm
# saves an interpreter and torch's import per algorithm); then one job for the study's figures
# and tables (and the margin paths in one table). Adding an n value or a regime adds only its own jobs (and reruns
# the figures); changing one algorithm's settings reruns every (regime, n) job.
from ibrobust.studies import price_linear as _price  # noqa: E402

PRICE_STUDIES = studies_of("price_linear")
PRICE_WILDCARDS = dict(
    dataset=alternatives({d for s in PRICE_STUDIES for d in STUDIES[s]["datasets"]}) or NO_MATCH,
    n=r"\d+",
)
PRICE_RUN = "results/{study}/{dataset}/n{n}"


rule price_test_data:
    output:
        data="results/{study}/{dataset}/data/test.npz",
        meta="results/{study}/{dataset}/data/test.json",
    log:
        "results/logs/price_test_data/{study}/{dataset}.log",
    benchmark:
        "results/benchmarks/price_test_data/{study}/{dataset}.tsv"
    wildcard_constraints:
        dataset=PRICE_WILDCARDS["dataset"],
    params:
        dataset=lambda w: _price.data(config, STUDIES[w.study], w.dataset)["dataset"],
        seed=lambda w: _price.data(config, STUDIES[w.study], w.dataset)["seed"],
        code=code("price_test_data"),
    threads: config["threads"]
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_test_data.py"


rule price_train:
    input:
        test="results/{study}/{dataset}/data/test.npz",
    output:
        data=f"{PRICE_RUN}/data.npz",
        meta=f"{PRICE_RUN}/data.json",
        metrics=f"{PRICE_RUN}/metrics.csv",
        margin_path=f"{PRICE_RUN}/margin_path.csv",
        weights=f"{PRICE_RUN}/weights.npz",
    log:
        "results/logs/price_train/{study}/{dataset}/n{n}.log",
    benchmark:
        "results/benchmarks/price_train/{study}/{dataset}/n{n}.tsv"
    wildcard_constraints:
        dataset=PRICE_WILDCARDS["dataset"],
        n=PRICE_WILDCARDS["n"],
    params:
        dataset=lambda w: _price.data(config, STUDIES[w.study], w.dataset)["dataset"],
        seed=lambda w: _price.data(config, STUDIES[w.study], w.dataset)["seed"],
        draws=lambda w: _price.data(config, STUDIES[w.study], w.dataset)["draws"],
        n=lambda w: int(w.n),
        optimizers=lambda w: _price.training(config, STUDIES[w.study])["optimizers"],
        stopping=lambda w: _price.training(config, STUDIES[w.study])["stopping"],
        eps_fractions=lambda w: _price.training(config, STUDIES[w.study])["eps_fractions"],
        code=lambda w: code("price_train", *_price.optimizer_modules(config, STUDIES[w.study])),
    threads: config["threads"]
    resources:
        mem_mb=3000,
        runtime=60,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_train.py"


# figures, tables and the ledger: seconds of work each, so they run in the Snakemake
# process's own machine even under --profile profiles/slurm (no sbatch per figure)
localrules: price_linear_figures


rule price_linear_figures:
    input:
        metrics=lambda w: _price.files(w.study, STUDIES[w.study], "metrics.csv"),
        weights=lambda w: _price.files(w.study, STUDIES[w.study], "weights.npz"),
        margin_path=lambda w: _price.files(w.study, STUDIES[w.study], "margin_path.csv"),
    output:
        gap_png=report("results/{study}/figures/gap_vs_n.png", caption="../report/price_linear/gap_vs_n.rst", category="{study}", subcategory="figures"),
        gap_pdf="results/{study}/figures/gap_vs_n.pdf",
        gap_csv="results/{study}/figures/gap_vs_n.csv",
        robust_png=report("results/{study}/figures/gap_difference_robust.png", caption="../report/price_linear/gap_difference.rst", category="{study}", subcategory="figures"),
        robust_pdf="results/{study}/figures/gap_difference_robust.pdf",
        robust_csv="results/{study}/figures/gap_difference_robust.csv",
        clean_png=report("results/{study}/figures/gap_difference_clean.png", caption="../report/price_linear/gap_difference.rst", category="{study}", subcategory="figures"),
        clean_pdf="results/{study}/figures/gap_difference_clean.pdf",
        clean_csv="results/{study}/figures/gap_difference_clean.csv",
        cosines_png=report("results/{study}/figures/solution_cosines.png", caption="../report/price_linear/solution_cosines.rst", category="{study}", subcategory="figures"),
        cosines_pdf="results/{study}/figures/solution_cosines.pdf",
        cosines_csv="results/{study}/figures/solution_cosines.csv",
        summary_csv="results/{study}/figures/summary.csv",
        summary_md="results/{study}/figures/summary.md",
        margin_path_csv="results/{study}/figures/margin_path.csv",
    log:
        "results/logs/figures/{study}/price_linear.log",
    params:
        runs=lambda w: _price.runs(STUDIES[w.study]),
        registry=lambda w: _price.registry(config, STUDIES[w.study]),
        plots=plot_params,
        code=lambda w: code("price_linear_figures", *_price.optimizer_modules(config, STUDIES[w.study])),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_linear_figures.py"
