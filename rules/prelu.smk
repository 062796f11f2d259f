# Study PRELU (kind prelu; package ibrobust.studies.prelu): implicit bias of pReLU networks
# (Min & Vidal, ICML 2024). The models and attacks come from the generic network rules
# (dataset, train, attack); this file adds the analysis of the synthetic half's runs (neuron
# alignment, distances to the ideal classifiers F and F^(p)) and the figures and tables of
# both halves. The analysis is one job over all runs rather than one per run: it takes ~0.1 s
# per run, while every job costs ~2.5 s of CPU (interpreter and torch import), more than the
# analysis of a whole run.
from ibrobust.studies import prelu as _prelu  # noqa: E402


rule prelu_analyze:
    input:
        data=lambda w: [f"results/datasets/{r['dataset']}/seed{r['seed']}/data.npz"
                        for r in _prelu.runs(config, w.study, "synthetic")],
        models=lambda w: files(w.study, _prelu.runs(config, w.study, "synthetic"), "model.pt"),
    output:
        runs="results/{study}/analysis/synthetic_runs.csv",
        alignment="results/{study}/analysis/synthetic_alignment.csv",
    log:
        "results/logs/prelu_analyze/{study}.log",
    benchmark:
        "results/benchmarks/prelu_analyze/{study}.tsv"
    params:
        runs=lambda w: _prelu.runs(config, w.study, "synthetic"),
        analysis=lambda w: _prelu.analysis_params(STUDIES[w.study]),
        code=lambda w: code("prelu_analyze", *_prelu.model_modules(config, w.study, "synthetic")),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_analyze.py"


rule prelu_robust_figure:
    input:
        lambda w: files(w.study, _prelu.runs(config, w.study, "synthetic"), "attack/main/robust_accuracy.csv"),
    output:
        png=report("results/{study}/figures/robust_accuracy_vs_radius.png", caption="../report/prelu/robust_accuracy_vs_radius.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/robust_accuracy_vs_radius.pdf",
        csv="results/{study}/figures/robust_accuracy_vs_radius.csv",
    log:
        "results/logs/figures/{study}/robust_accuracy_vs_radius.log",
    params:
        runs=lambda w: _prelu.runs(config, w.study, "synthetic"),
        labels=lambda w: _prelu.labels(config, w.study, "synthetic"),
        plots=plot_params,
        code=code("prelu_robust_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_robust_figure.py"


rule prelu_alignment_figure:
    input:
        "results/{study}/analysis/synthetic_alignment.csv",
    output:
        png=report("results/{study}/figures/neuron_alignment.png", caption="../report/prelu/neuron_alignment.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/neuron_alignment.pdf",
        csv="results/{study}/figures/neuron_alignment.csv",
    log:
        "results/logs/figures/{study}/neuron_alignment.log",
    params:
        runs=lambda w: _prelu.runs(config, w.study, "synthetic"),
        labels=lambda w: _prelu.labels(config, w.study, "synthetic"),
        plots=plot_params,
        code=code("prelu_alignment_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_alignment_figure.py"


rule prelu_distance_figure:
    input:
        "results/{study}/analysis/synthetic_runs.csv",
    output:
        png=report("results/{study}/figures/ideal_distances.png", caption="../report/prelu/ideal_distances.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/ideal_distances.pdf",
        csv="results/{study}/figures/ideal_distances.csv",
    log:
        "results/logs/figures/{study}/ideal_distances.log",
    params:
        runs=lambda w: _prelu.runs(config, w.study, "synthetic"),
        labels=lambda w: _prelu.labels(config, w.study, "synthetic"),
        plots=plot_params,
        code=code("prelu_distance_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_distance_figure.py"


rule prelu_summary_table:
    input:
        attack=lambda w: files(w.study, _prelu.runs(config, w.study, "synthetic"), "attack/main/summary.json"),
        analysis="results/{study}/analysis/synthetic_runs.csv",
        train=lambda w: files(w.study, _prelu.runs(config, w.study, "synthetic"), "metrics.json"),
    output:
        csv="results/{study}/figures/summary.csv",
        md="results/{study}/figures/summary.md",
    log:
        "results/logs/figures/{study}/summary.log",
    params:
        runs=lambda w: _prelu.runs(config, w.study, "synthetic"),
        labels=lambda w: _prelu.labels(config, w.study, "synthetic"),
        code=code("prelu_summary_table"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_summary_table.py"


rule prelu_mnist_figure:
    input:
        lambda w: attack_files(w.study, attack_runs(w.study, _prelu.runs(config, w.study, "mnist")), "robust_accuracy.csv"),
    output:
        png=report("results/{study}/figures/mnist_robust_accuracy.png", caption="../report/prelu/mnist_robust_accuracy.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/mnist_robust_accuracy.pdf",
        csv="results/{study}/figures/mnist_robust_accuracy.csv",
    log:
        "results/logs/figures/{study}/mnist_robust_accuracy.log",
    params:
        runs=lambda w: attack_runs(w.study, _prelu.runs(config, w.study, "mnist")),
        labels=lambda w: _prelu.labels(config, w.study, "mnist"),
        plots=plot_params,
        code=code("prelu_mnist_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_mnist_figure.py"


rule prelu_table1:
    input:
        attack=lambda w: attack_files(w.study, attack_runs(w.study, _prelu.runs(config, w.study, "mnist")), "summary.json"),
        train=lambda w: files(w.study, _prelu.runs(config, w.study, "mnist"), "metrics.json"),
    output:
        csv="results/{study}/figures/table1.csv",
        md="results/{study}/figures/table1.md",
    log:
        "results/logs/figures/{study}/table1.log",
    params:
        attack_runs=lambda w: attack_runs(w.study, _prelu.runs(config, w.study, "mnist")),
        runs=lambda w: _prelu.runs(config, w.study, "mnist"),
        labels=lambda w: _prelu.labels(config, w.study, "mnist"),
        code=code("prelu_table1"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_table1.py"
