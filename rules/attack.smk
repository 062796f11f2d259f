# Attack evaluation on the test set over a radius grid ("main" curve or "scaling" sweep).


rule attack:
    input:
        data=RESULTS + "/datasets/{dataset}/seed{seed}/data.npz",
        model=RUN_DIR + "/model.pt",
    output:
        table=RUN_DIR + "/attack/{grid}/robust_accuracy.csv",
        summary=RUN_DIR + "/attack/{grid}/summary.json",
    log:
        RESULTS + "/logs/attack/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}.log",
    benchmark:
        RESULTS + "/benchmarks/attack/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}.tsv"
    params:
        attacks=attack_params,
        radii=attack_radii,
        points=attack_points,
        seed=lambda w: int(w.seed),
        code=code("attack"),
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/attack.py"
