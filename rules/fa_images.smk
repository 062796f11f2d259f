# Study FA-IMAGES (kind feature_averaging_images; package
# ibrobust.studies.feature_averaging_images): Li et al. Fig. 2/3 on real images. The models,
# attacks and analyses come from the generic network rules (train, attack, analyze); one job
# draws the cosine heatmaps and the robust-accuracy curves and writes the summary.


# figures, tables and the ledger: seconds of work each, so they run in the Snakemake
# process's own machine even under --profile profiles/slurm (no sbatch per figure)
localrules: fa_images_figures


rule fa_images_figures:
    input:
        cosine=lambda w: files(w.study, first_seed_runs(w.study), "analysis/cosine.csv"),
        curves=lambda w: readout_files(w.study, readout_runs(w.study, main_runs(w.study)), "main", "robust_accuracy.csv"),
        train=lambda w: files(w.study, main_runs(w.study), "metrics.json"),
    output:
        cosine_png=report("results/{study}/figures/cosine_heatmaps.png", caption="../report/analysis/cosine_heatmaps.rst", category="{study}", subcategory="figures"),
        cosine_pdf="results/{study}/figures/cosine_heatmaps.pdf",
        cosine_csv="results/{study}/figures/cosine_heatmaps.csv",
        robust_png=report("results/{study}/figures/robust_accuracy_vs_radius.png", caption="../report/feature_averaging_images/robust_accuracy_vs_radius.rst", category="{study}", subcategory="figures"),
        robust_pdf="results/{study}/figures/robust_accuracy_vs_radius.pdf",
        robust_csv="results/{study}/figures/robust_accuracy_vs_radius.csv",
        summary_csv="results/{study}/figures/summary.csv",
        summary_md="results/{study}/figures/summary.md",
    log:
        "results/logs/figures/{study}/fa_images.log",
    params:
        cosine_runs=lambda w: first_seed_runs(w.study),
        attack_runs=lambda w: readout_runs(w.study, main_runs(w.study)),
        runs=lambda w: main_runs(w.study),
        readouts=lambda w: list(STUDIES[w.study]["readouts"]),
        report_radii=lambda w: {d: [float(r) for r in v] for d, v in STUDIES[w.study]["report_radii"].items()},
        paper_tasks=lambda w: dict(STUDIES[w.study]["paper_tasks"]),
        plots=plot_params,
        code=code("fa_images_figures"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_images_figures.py"
