# Margin vs input gradient per test point (issue 11 section 2) of the feature-averaging
# studies (part of their outputs, so of the default target): every trained and reference
# net of the study, each binary readout, one figure + the per-point CSV + a per-(net,
# readout, seed) summary the claims ledger reads. Uses the study's attacks (those that apply to each supervision, judged on
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
    wildcard_constraints:  # not in a study kind's rules file: constrained here
        study=study_constraint("feature_averaging"),
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
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/fa_margin_gradient.py"
