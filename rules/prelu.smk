# Study PRELU (kind prelu; package ibrobust.studies.prelu): implicit bias of pReLU networks
# (Min & Vidal, ICML 2024). The models and attacks come from the generic network rules
# (dataset, train, attack); this file adds the analysis of the synthetic half's runs (neuron
# alignment, distances to the ideal classifiers F and F^(p)) and one figures-and-tables job
# per half (the default target builds the synthetic half only). The analysis is one job over all runs rather than one per run: it takes ~0.1 s
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


# figures, tables and the ledger: seconds of work each, so they run in the Snakemake
# process's own machine even under --profile profiles/slurm (no sbatch per figure)
localrules: prelu_figures, prelu_mnist_figures


rule prelu_figures:
    input:
        curves=lambda w: files(w.study, _prelu.runs(config, w.study, "synthetic"), "attack/main/robust_accuracy.csv"),
        attack=lambda w: files(w.study, _prelu.runs(config, w.study, "synthetic"), "attack/main/summary.json"),
        train=lambda w: files(w.study, _prelu.runs(config, w.study, "synthetic"), "metrics.json"),
        alignment="results/{study}/analysis/synthetic_alignment.csv",
        analysis="results/{study}/analysis/synthetic_runs.csv",
        refined=lambda w: files(w.study, _prelu.refined_runs(config, w.study), "attack/main/refined.json"),
    output:
        robust_png=report("results/{study}/figures/robust_accuracy_vs_radius.png", caption="../report/prelu/robust_accuracy_vs_radius.rst", category="{study}", subcategory="figures"),
        robust_pdf="results/{study}/figures/robust_accuracy_vs_radius.pdf",
        robust_csv="results/{study}/figures/robust_accuracy_vs_radius.csv",
        alignment_png=report("results/{study}/figures/neuron_alignment.png", caption="../report/prelu/neuron_alignment.rst", category="{study}", subcategory="figures"),
        alignment_pdf="results/{study}/figures/neuron_alignment.pdf",
        alignment_csv="results/{study}/figures/neuron_alignment.csv",
        distances_png=report("results/{study}/figures/ideal_distances.png", caption="../report/prelu/ideal_distances.rst", category="{study}", subcategory="figures"),
        distances_pdf="results/{study}/figures/ideal_distances.pdf",
        distances_csv="results/{study}/figures/ideal_distances.csv",
        summary_csv="results/{study}/figures/summary.csv",
        summary_md="results/{study}/figures/summary.md",
    log:
        "results/logs/figures/{study}/prelu.log",
    params:
        runs=lambda w: _prelu.runs(config, w.study, "synthetic"),
        refined_runs=lambda w: _prelu.refined_runs(config, w.study),
        labels=lambda w: _prelu.labels(config, w.study, "synthetic"),
        plots=plot_params,
        code=code("prelu_figures"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_figures.py"


rule prelu_mnist_figures:
    input:
        curves=lambda w: attack_files(w.study, attack_runs(w.study, _prelu.runs(config, w.study, "mnist")), "robust_accuracy.csv"),
        attack=lambda w: attack_files(w.study, attack_runs(w.study, _prelu.runs(config, w.study, "mnist")), "summary.json"),
        train=lambda w: files(w.study, _prelu.runs(config, w.study, "mnist"), "metrics.json"),
    output:
        png=report("results/{study}/figures/mnist_robust_accuracy.png", caption="../report/prelu/mnist_robust_accuracy.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/mnist_robust_accuracy.pdf",
        csv="results/{study}/figures/mnist_robust_accuracy.csv",
        table_csv="results/{study}/figures/table1.csv",
        table_md="results/{study}/figures/table1.md",
    log:
        "results/logs/figures/{study}/prelu_mnist.log",
    params:
        attack_runs=lambda w: attack_runs(w.study, _prelu.runs(config, w.study, "mnist")),
        runs=lambda w: _prelu.runs(config, w.study, "mnist"),
        labels=lambda w: _prelu.labels(config, w.study, "mnist"),
        plots=plot_params,
        code=code("prelu_mnist_figures"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_mnist_figures.py"


# the refined critical radius (synthetic `refine`): per run, the attack job's grid again (same
# attacks, radii, points and random stream) and each point's grid cell bisected to the
# tolerance under the worst case over the attacks (ibrobust.stages.radii); main_grid_wildcards:
# rules/common.smk
rule prelu_refine:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
        attack="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/main/robust_accuracy.csv",
    output:
        points="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/main/point_radii.csv",
        summary="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/main/refined.json",
    log:
        "results/logs/prelu_refine/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.log",
    benchmark:
        "results/benchmarks/prelu_refine/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.tsv"
    params:
        attacks=lambda w: attack_params(main_grid_wildcards(w)),
        radii=lambda w: attack_radii(main_grid_wildcards(w)),
        points=lambda w: attack_points(main_grid_wildcards(w)),
        task=attack_task,
        seed=lambda w: int(w.seed),
        tolerance=lambda w: float(STUDIES[w.study]["synthetic"]["refine"]["tolerance"]),
        code=lambda w: code("prelu_refine", kind_module("models", w.model),
                            *kind_modules("attacks", attack_params(main_grid_wildcards(w)))),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/prelu_refine.py"
