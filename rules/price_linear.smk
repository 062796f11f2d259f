# Study PRICE-LIN (kind price_linear; package ibrobust.studies.price_linear): robust ERM with
# steepest descent on linear models and GD on diagonal nets (Tsilivis et al. NeurIPS 2024,
# Sec. 5.1). Jobs: the test set per regime, the training draws + exact l_inf margins per
# (regime, n), one vectorised training job per (regime, n, algorithm) over every draw x eps
# fraction, then figures and tables. Adding an n value or a regime adds only its own data and
# training jobs (and reruns the figures). Regime (dataset) x n x algorithm (optimizer).
from ibrobust.studies import price_linear as _price  # noqa: E402

PRICE_STUDIES = studies_of("price_linear")
PRICE_WILDCARDS = dict(
    dataset=alternatives({d for s in PRICE_STUDIES for d in STUDIES[s]["datasets"]}) or NO_MATCH,
    optimizer=alternatives({o for s in PRICE_STUDIES for o in STUDIES[s]["optimizers"]}) or NO_MATCH,
    n=r"\d+",
    gap="robust|clean",
)


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


rule price_train_data:
    output:
        data="results/{study}/{dataset}/data/n{n}.npz",
        meta="results/{study}/{dataset}/data/n{n}.json",
    log:
        "results/logs/price_train_data/{study}/{dataset}/n{n}.log",
    benchmark:
        "results/benchmarks/price_train_data/{study}/{dataset}/n{n}.tsv"
    wildcard_constraints:
        dataset=PRICE_WILDCARDS["dataset"],
        n=PRICE_WILDCARDS["n"],
    params:
        dataset=lambda w: _price.data(config, STUDIES[w.study], w.dataset)["dataset"],
        seed=lambda w: _price.data(config, STUDIES[w.study], w.dataset)["seed"],
        draws=lambda w: _price.data(config, STUDIES[w.study], w.dataset)["draws"],
        n=lambda w: int(w.n),
        code=code("price_train_data"),
    threads: config["threads"]
    resources:
        mem_mb=2000,
        runtime=20,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_train_data.py"


rule price_train:
    input:
        train="results/{study}/{dataset}/data/n{n}.npz",
        test="results/{study}/{dataset}/data/test.npz",
    output:
        metrics="results/{study}/{dataset}/{optimizer}/n{n}/metrics.csv",
        weights="results/{study}/{dataset}/{optimizer}/n{n}/weights.npz",
    log:
        "results/logs/price_train/{study}/{dataset}/{optimizer}/n{n}.log",
    benchmark:
        "results/benchmarks/price_train/{study}/{dataset}/{optimizer}/n{n}.tsv"
    wildcard_constraints:
        dataset=PRICE_WILDCARDS["dataset"],
        optimizer=PRICE_WILDCARDS["optimizer"],
        n=PRICE_WILDCARDS["n"],
    params:
        optimizer=lambda w: _price.training(config, STUDIES[w.study], w.optimizer)["optimizer"],
        stopping=lambda w: _price.training(config, STUDIES[w.study], w.optimizer)["stopping"],
        eps_fractions=lambda w: _price.training(config, STUDIES[w.study], w.optimizer)["eps_fractions"],
        code=lambda w: code("price_train", kind_module("optimizers", w.optimizer)),
    threads: config["threads"]
    resources:
        mem_mb=3000,
        runtime=60,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_train.py"


rule price_gap_figure:
    input:
        lambda w: _price.files(w.study, STUDIES[w.study], "metrics.csv"),
    output:
        png=report("results/{study}/figures/gap_vs_n.png", caption="../report/price_linear/gap_vs_n.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/gap_vs_n.pdf",
        csv="results/{study}/figures/gap_vs_n.csv",
    log:
        "results/logs/figures/{study}/gap_vs_n.log",
    params:
        runs=lambda w: _price.runs(STUDIES[w.study]),
        registry=lambda w: _price.registry(config, STUDIES[w.study]),
        plots=plot_params,
        code=lambda w: code("price_gap_figure", *_price.optimizer_modules(config, STUDIES[w.study])),
    threads: config["threads"]
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_gap_figure.py"


rule price_gap_difference_figure:
    input:
        lambda w: _price.files(w.study, STUDIES[w.study], "metrics.csv"),
    output:
        png=report("results/{study}/figures/gap_difference_{gap}.png", caption="../report/price_linear/gap_difference.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/gap_difference_{gap}.pdf",
        csv="results/{study}/figures/gap_difference_{gap}.csv",
    log:
        "results/logs/figures/{study}/gap_difference_{gap}.log",
    wildcard_constraints:
        gap=PRICE_WILDCARDS["gap"],
    params:
        runs=lambda w: _price.runs(STUDIES[w.study]),
        registry=lambda w: _price.registry(config, STUDIES[w.study]),
        gap=lambda w: f"{w.gap}_gap",
        plots=plot_params,
        code=lambda w: code("price_gap_difference_figure", *_price.optimizer_modules(config, STUDIES[w.study])),
    threads: config["threads"]
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_gap_difference_figure.py"


rule price_cosine_figure:
    input:
        lambda w: _price.files(w.study, STUDIES[w.study], "weights.npz"),
    output:
        png=report("results/{study}/figures/solution_cosines.png", caption="../report/price_linear/solution_cosines.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/solution_cosines.pdf",
        csv="results/{study}/figures/solution_cosines.csv",
    log:
        "results/logs/figures/{study}/solution_cosines.log",
    params:
        runs=lambda w: _price.runs(STUDIES[w.study]),
        registry=lambda w: _price.registry(config, STUDIES[w.study]),
        plots=plot_params,
        code=lambda w: code("price_cosine_figure", *_price.optimizer_modules(config, STUDIES[w.study])),
    threads: config["threads"]
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_cosine_figure.py"


rule price_summary_table:
    input:
        metrics=lambda w: _price.files(w.study, STUDIES[w.study], "metrics.csv"),
        cosines="results/{study}/figures/solution_cosines.csv",
    output:
        csv="results/{study}/figures/summary.csv",
        md="results/{study}/figures/summary.md",
    log:
        "results/logs/figures/{study}/summary.log",
    params:
        runs=lambda w: _price.runs(STUDIES[w.study]),
        registry=lambda w: _price.registry(config, STUDIES[w.study]),
        code=lambda w: code("price_summary_table", *_price.optimizer_modules(config, STUDIES[w.study])),
    threads: config["threads"]
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_summary_table.py"
