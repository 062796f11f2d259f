# Figures and tables of a feature_averaging study: each PNG + PDF comes with the CSV it
# was drawn from. Plot options reach the scripts through params, so changing them reruns
# only these jobs.

FIGURES = RESULTS + "/{study}/figures"


def _runs(runs):
    return [dict(zip(("dataset", "model", "optimizer", "supervision", "seed"), r)) for r in runs]


def first_seed_runs(study):
    return _runs(trained_runs(study, seeds=[STUDIES[study]["seeds"][0]]))


def main_runs(study):
    return _runs(trained_runs(study) + reference_runs(study))


def files(study, runs, tail):
    return [run_dir(study, **r) + tail for r in runs]


rule fa_cosine_figure:
    input:
        lambda w: files(w.study, first_seed_runs(w.study), "/analysis/cosine.csv"),
    output:
        png=FIGURES + "/cosine_heatmaps.png",
        pdf=FIGURES + "/cosine_heatmaps.pdf",
        csv=FIGURES + "/cosine_heatmaps.csv",
    log:
        RESULTS + "/logs/figures/{study}/cosine_heatmaps.log",
    params:
        runs=lambda w: first_seed_runs(w.study),
        plots=plot_params,
        code=code("fa_cosine_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_cosine_figure.py"


rule fa_lambda_figure:
    input:
        lambda w: files(w.study, first_seed_runs(w.study), "/analysis/lambdas.csv"),
    output:
        png=FIGURES + "/lambda_trajectories.png",
        pdf=FIGURES + "/lambda_trajectories.pdf",
        csv=FIGURES + "/lambda_trajectories.csv",
    log:
        RESULTS + "/logs/figures/{study}/lambda_trajectories.log",
    params:
        runs=lambda w: first_seed_runs(w.study),
        plots=plot_params,
        code=code("fa_lambda_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_lambda_figure.py"


rule fa_robust_figure:
    input:
        lambda w: files(w.study, main_runs(w.study), "/attack/main/robust_accuracy.csv"),
    output:
        png=FIGURES + "/robust_accuracy_vs_radius.png",
        pdf=FIGURES + "/robust_accuracy_vs_radius.pdf",
        csv=FIGURES + "/robust_accuracy_vs_radius.csv",
    log:
        RESULTS + "/logs/figures/{study}/robust_accuracy_vs_radius.log",
    params:
        runs=lambda w: main_runs(w.study),
        datasets=lambda w: {ds: dataset_config(ds) for ds in STUDIES[w.study]["datasets"]},
        plots=plot_params,
        code=code("fa_robust_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_robust_figure.py"


rule fa_scaling_figure:
    input:
        lambda w: files(w.study, _runs(scaling_runs(w.study)), "/attack/scaling/robust_accuracy.csv"),
    output:
        png=FIGURES + "/critical_radius_scaling.png",
        pdf=FIGURES + "/critical_radius_scaling.pdf",
        csv=FIGURES + "/critical_radius_scaling.csv",
    log:
        RESULTS + "/logs/figures/{study}/critical_radius_scaling.log",
    params:
        runs=lambda w: _runs(scaling_runs(w.study)),
        datasets=lambda w: {r[0]: dataset_config(r[0]) for r in scaling_runs(w.study)},
        key=lambda w: STUDIES[w.study]["scaling"]["key"],
        plots=plot_params,
        code=code("fa_scaling_figure"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_scaling_figure.py"


rule fa_summary_table:
    input:
        attack=lambda w: files(w.study, main_runs(w.study), "/attack/main/summary.json"),
        analysis=lambda w: files(w.study, _runs(trained_runs(w.study)), "/analysis/summary.json"),
    output:
        csv=FIGURES + "/summary.csv",
        md=FIGURES + "/summary.md",
    log:
        RESULTS + "/logs/figures/{study}/summary.log",
    params:
        attack_runs=lambda w: main_runs(w.study),
        analysis_runs=lambda w: _runs(trained_runs(w.study)),
        code=code("fa_summary_table"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_summary_table.py"
