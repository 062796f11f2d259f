# Study PRICE-NN (kind price_nn; package ibrobust.studies.price_nn): GD vs sign descent on
# networks under ERM and robust ERM (Tsilivis et al., NeurIPS 2024, Sec. 5.2). The models
# (robust ERM = the optimizers' adversarial block, curves = their eval_every) and the final
# strong evaluation come from the generic network rules (dataset, train, attack); this file
# adds the one job that turns the runs into the curves, the FC table, the CNN heatmap, the
# per-cell summary and the per-seed pairs.
from ibrobust.studies import price_nn as _price_nn  # noqa: E402


# figures, tables and the ledger: seconds of work each, so they run in the Snakemake
# process's own machine even under --profile profiles/slurm (no sbatch per figure)
localrules: price_nn_figures


rule price_nn_figures:
    input:
        history=lambda w: _price_nn.run_files(config, w.study, "history.csv"),
        metrics=lambda w: _price_nn.run_files(config, w.study, "metrics.json"),
        attack=lambda w: _price_nn.run_files(config, w.study, "attack/main/summary.json"),
    output:
        curves_png=report("results/{study}/figures/accuracy_curves.png", caption="../report/price_nn/accuracy_curves.rst", category="{study}", subcategory="figures"),
        curves_pdf="results/{study}/figures/accuracy_curves.pdf",
        curves_csv="results/{study}/figures/accuracy_curves.csv",
        heatmap_png=report("results/{study}/figures/cnn_heatmap.png", caption="../report/price_nn/cnn_heatmap.rst", category="{study}", subcategory="figures"),
        heatmap_pdf="results/{study}/figures/cnn_heatmap.pdf",
        heatmap_csv="results/{study}/figures/cnn_heatmap.csv",
        fc_csv="results/{study}/figures/fc_table.csv",
        fc_md=report("results/{study}/figures/fc_table.md", caption="../report/price_nn/fc_table.rst", category="{study}", subcategory="tables"),
        summary_csv="results/{study}/figures/summary.csv",
        summary_md=report("results/{study}/figures/summary.md", caption="../report/price_nn/summary.rst", category="{study}", subcategory="tables"),
        cells_csv="results/{study}/figures/cells.csv",
        cells_md=report("results/{study}/figures/cells.md", caption="../report/price_nn/cells.rst", category="{study}", subcategory="tables"),
        runs="results/{study}/figures/runs.csv",
    log:
        "results/logs/figures/{study}/price_nn.log",
    params:
        runs=lambda w: _price_nn.all_runs(config, w.study),
        curve_n=lambda w: _price_nn.curve_n(STUDIES[w.study]),
        plots=plot_params,
        code=code("price_nn_figures"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/price_nn_figures.py"
