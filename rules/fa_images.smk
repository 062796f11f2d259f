# Study FA-IMAGES (kind feature_averaging_images; package
# ibrobust.studies.feature_averaging_images): Li et al. Fig. 2/3 on real images. The models,
# attacks and cosine heatmaps come from the generic network rules (train, attack, analyze,
# cosine_figure); only the robust-accuracy figure and the summary are kind-specific.


rule images_robust_figure:
    input:
        lambda w: readout_files(w.study, readout_runs(w.study, main_runs(w.study)), "main", "robust_accuracy.csv"),
    output:
        png=report("results/{study}/figures/robust_accuracy_vs_radius.png", caption="../report/feature_averaging_images/robust_accuracy_vs_radius.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/robust_accuracy_vs_radius.pdf",
        csv="results/{study}/figures/robust_accuracy_vs_radius.csv",
    log:
        "results/logs/figures/{study}/robust_accuracy_vs_radius.log",
    params:
        runs=lambda w: readout_runs(w.study, main_runs(w.study)),
        readouts=lambda w: list(STUDIES[w.study]["readouts"]),
        plots=plot_params,
        code=code("images_robust_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/images_robust_figure.py"


rule images_summary_table:
    input:
        attack=lambda w: readout_files(w.study, readout_runs(w.study, main_runs(w.study)), "main", "robust_accuracy.csv"),
        train=lambda w: files(w.study, main_runs(w.study), "metrics.json"),
    output:
        csv="results/{study}/figures/summary.csv",
        md="results/{study}/figures/summary.md",
    log:
        "results/logs/figures/{study}/summary.log",
    params:
        attack_runs=lambda w: readout_runs(w.study, main_runs(w.study)),
        runs=lambda w: main_runs(w.study),
        readouts=lambda w: list(STUDIES[w.study]["readouts"]),
        report_radii=lambda w: {d: [float(r) for r in v] for d, v in STUDIES[w.study]["report_radii"].items()},
        paper_tasks=lambda w: dict(STUDIES[w.study]["paper_tasks"]),
        code=code("images_summary_table"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/images_summary_table.py"
