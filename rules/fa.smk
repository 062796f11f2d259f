# Study FA (kind feature_averaging; package ibrobust.studies.feature_averaging): figures and
# tables of binary vs k-class training on orthogonal clusters. The models, attacks and
# analyses come from the generic network rules; one job draws the cosine heatmaps and the
# robust-accuracy curves and writes the summary, and the figures that exist only in some
# studies (the lambda trajectories of decomposed nets, the scaling sweep) have a job each.
# Each PNG + PDF comes with the CSV it was drawn from. Plot options reach the scripts through
# params, so changing them reruns only these jobs.
from ibrobust.studies import feature_averaging as _fa  # noqa: E402


rule fa_lambda_figure:
    input:
        lambdas=lambda w: files(w.study, _fa.first_seed_decomposed(config, w.study), "analysis/lambdas.csv"),
        decompositions=lambda w: files(w.study, _fa.first_seed_decomposed(config, w.study), "analysis/decomposition.json"),
    output:
        png=report("results/{study}/figures/lambda_trajectories.png", caption="../report/feature_averaging/lambda_trajectories.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/lambda_trajectories.pdf",
        csv="results/{study}/figures/lambda_trajectories.csv",
    log:
        "results/logs/figures/{study}/lambda_trajectories.log",
    params:
        runs=lambda w: _fa.first_seed_decomposed(config, w.study),
        plots=plot_params,
        code=code("fa_lambda_figure"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_lambda_figure.py"


# figures, tables and the ledger: seconds of work each, so they run in the Snakemake
# process's own machine even under --profile profiles/slurm (no sbatch per figure)
localrules: fa_figures, fa_lambda_figure, fa_scaling_figure


rule fa_figures:
    input:
        cosine=lambda w: files(w.study, first_seed_runs(w.study), "analysis/cosine.csv"),
        curves=lambda w: readout_files(w.study, _fa.attack_runs(config, w.study, "main"), "main", "robust_accuracy.csv"),
        attack=lambda w: readout_files(w.study, _fa.attack_runs(config, w.study, "main"), "main", "summary.json"),
        analysis=lambda w: files(w.study, _runs(trained_runs(w.study)), "analysis/summary.json"),
        decomposition=lambda w: files(w.study, _fa.decomposed_runs(config, w.study), "analysis/decomposition.json"),
        refined=lambda w: fa_refined_files(w.study, "main"),
        # the trained nets' own test metrics (the k-class nets' fine_acc)
        metrics=lambda w: files(w.study, _runs(trained_runs(w.study)), "metrics.json"),
    output:
        cosine_png=report("results/{study}/figures/cosine_heatmaps.png", caption="../report/analysis/cosine_heatmaps.rst", category="{study}", subcategory="figures"),
        cosine_pdf="results/{study}/figures/cosine_heatmaps.pdf",
        cosine_csv="results/{study}/figures/cosine_heatmaps.csv",
        robust_png=report("results/{study}/figures/robust_accuracy_vs_radius.png", caption="../report/feature_averaging/robust_accuracy_vs_radius.rst", category="{study}", subcategory="figures"),
        robust_pdf="results/{study}/figures/robust_accuracy_vs_radius.pdf",
        robust_csv="results/{study}/figures/robust_accuracy_vs_radius.csv",
        summary_csv="results/{study}/figures/summary.csv",
        summary_md="results/{study}/figures/summary.md",
    log:
        "results/logs/figures/{study}/fa.log",
    params:
        cosine_runs=lambda w: first_seed_runs(w.study),
        attack_runs=lambda w: _fa.attack_runs(config, w.study, "main"),
        readouts=lambda w: list(STUDIES[w.study]["readouts"]),
        analysis_runs=lambda w: _runs(trained_runs(w.study)),
        decomposed_runs=lambda w: _fa.decomposed_runs(config, w.study),
        refined_runs=lambda w: _fa.refined_runs(config, w.study, "main"),
        datasets=lambda w: {ds: dataset_config(ds) for ds in STUDIES[w.study]["datasets"]},
        model_kinds=model_kinds,
        model_labels=model_labels,
        plots=plot_params,
        code=code("fa_figures"),
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_figures.py"


rule fa_scaling_figure:
    input:
        curves=lambda w: readout_files(w.study, _fa.attack_runs(config, w.study, "scaling"), "scaling", "robust_accuracy.csv"),
        refined=lambda w: fa_refined_files(w.study, "scaling"),
        # the sweep's decomposed nets (scaling.decompose; where n_train <= d): their final
        # lambdas become columns of the table, which the d-trend lambda claims read
        decompositions=lambda w: files(w.study, _fa.sweep_decomposed_runs(config, w.study), "analysis/decomposition.json"),
    output:
        png=report("results/{study}/figures/critical_radius_scaling.png", caption="../report/feature_averaging/critical_radius_scaling.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/critical_radius_scaling.pdf",
        csv="results/{study}/figures/critical_radius_scaling.csv",
        slopes_csv="results/{study}/figures/scaling_summary.csv",
        slopes_md="results/{study}/figures/scaling_summary.md",
    log:
        "results/logs/figures/{study}/critical_radius_scaling.log",
    params:
        runs=lambda w: _fa.attack_runs(config, w.study, "scaling"),
        refined_runs=lambda w: _fa.refined_runs(config, w.study, "scaling"),
        decomposed_runs=lambda w: _fa.sweep_decomposed_runs(config, w.study),
        decompose=lambda w: STUDIES[w.study]["scaling"]["decompose"],
        readouts=lambda w: list(STUDIES[w.study]["readouts"]),
        datasets=lambda w: {r[0]: dataset_config(r[0]) for r in _fa.scaling_runs(config, w.study)},
        sweeps=lambda w: _fa.sweep_datasets(config, STUDIES[w.study]),
        model_labels=model_labels,
        plots=plot_params,
        code=code("fa_scaling_figure"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_scaling_figure.py"


# Margin vs input gradient per test point (issue 11 section 2), part of the study's outputs
# (so of the default target): every trained and reference net of the study, each binary
# readout, one figure + the per-point CSV + a per-(net, readout, seed) summary the claims
# ledger reads. Uses the study's attacks (those that apply to each supervision, judged on
# the binary task) on a fine radius grid (ibrobust.analysis.margin_gradient's defaults).


rule fa_margin_gradient:
    input:
        models=lambda w: files(w.study, main_runs(w.study), "model.pt"),
        data=lambda w: [f"results/datasets/{r['dataset']}/seed{r['seed']}/data.npz" for r in main_runs(w.study)],
    output:
        png=report("results/{study}/figures/margin_gradient.png", caption="../report/feature_averaging/margin_gradient.rst", category="{study}", subcategory="figures"),
        pdf="results/{study}/figures/margin_gradient.pdf",
        csv="results/{study}/figures/margin_gradient.csv",
        summary="results/{study}/figures/margin_gradient_summary.csv",
    log:
        "results/logs/figures/{study}/margin_gradient.log",
    params:
        runs=lambda w: main_runs(w.study),
        attacks=lambda w: {sup: {n: config["attacks"][n] for n in STUDIES[w.study]["attacks"]
                                 if attack_applies(config["attacks"][n], sup, "binary")}
                           for sup in ("binary", "multiclass")},
        readouts=lambda w: list(STUDIES[w.study]["readouts"]),
        radius_max=lambda w: max(float(r) for r in STUDIES[w.study]["radii"]),
        dataset=lambda w: dataset_config(STUDIES[w.study]["datasets"][0]),
        # breaking radii on 64 steps up to the study's largest radius (0.5 at FA's 32; a
        # fixed step would leave 3 radii on PRELU-scale grids such as fa_prelu's 1.5)
        settings=lambda w: {"radius_step": round(max(float(r) for r in STUDIES[w.study]["radii"]) / 64, 9)},
        model_labels=model_labels,
        plots=plot_params,
        device=DEVICE,
        # the script, plus the model and attack kinds it loads on demand
        code=lambda w: code(
            "fa_margin_gradient",
            *kind_modules("models", [r["model"] for r in main_runs(w.study)]),
            *kind_modules("attacks", STUDIES[w.study]["attacks"]),
        ),
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=GPU_JOB,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_margin_gradient.py"


# The refined critical radii (the study's `refine`): per 2-class run, grid and refined radius
# (worst: the worst case over the grid's attacks; an attack's name: that attack alone), the
# attack job's grid again (same attacks, radii, points and random stream) and the points of
# the 50 % crossing's grid cell bisected to the tolerance (ibrobust.stages.radii), so the
# critical radius is known to within the tolerance instead of the grid's cell.
# fa_refined_files, fa_refine_attacks: rules/common.smk
rule fa_refine:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
        attack="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/{grid}/robust_accuracy.csv",
    output:
        points="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/{grid}/point_radii.{radius}.csv",
        summary="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/{grid}/refined.{radius}.json",
    log:
        "results/logs/fa_refine/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}.{radius}.log",
    benchmark:
        "results/benchmarks/fa_refine/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}.{radius}.tsv"
    wildcard_constraints:
        supervision="binary",
        grid="main|scaling",
        radius="[A-Za-z0-9_]+",
    params:
        attacks=fa_refine_attacks,
        radii=attack_radii,
        points=attack_points,
        task=attack_task,
        seed=lambda w: int(w.seed),
        tolerance=lambda w: float(STUDIES[w.study]["refine"]["tolerance"]),
        code=lambda w: code("fa_refine", kind_module("models", w.model),
                            *kind_modules("attacks", fa_refine_attacks(w))),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_refine.py"
