# Attack evaluation on the test set over a radius grid ("main" curve or "scaling" sweep):
# `attack` reads the model through its own score (2-class models, on whose two heads every
# binary readout is the same score, and models judged on their fine labels);
# `attack_readout` reads a k-class model through one of its study's `readouts`, named in
# the path, so changing the list adds or drops only these jobs.


rule attack:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
    output:
        table="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/{grid}/robust_accuracy.csv",
        summary="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/{grid}/summary.json",
    log:
        "results/logs/attack/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}.log",
    benchmark:
        "results/benchmarks/attack/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}.tsv"
    params:
        attacks=attack_params,
        radii=attack_radii,
        points=attack_points,
        task=attack_task,
        readout="sum",
        seed=lambda w: int(w.seed),
        code=attack_code,
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/attack.py"


use rule attack as attack_readout with:
    output:
        table="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/{grid}/{readout}/robust_accuracy.csv",
        summary="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/{grid}/{readout}/summary.json",
    log:
        "results/logs/attack/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}.{readout}.log",
    benchmark:
        "results/benchmarks/attack/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}.{readout}.tsv"
    params:
        attacks=attack_params,
        radii=attack_radii,
        points=attack_points,
        task=attack_task,
        readout=lambda w: w.readout,
        seed=lambda w: int(w.seed),
        code=attack_code,
