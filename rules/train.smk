# Training (or, for the robust reference, construction) of one model.


rule train:
    input:
        data=RESULTS + "/datasets/{dataset}/seed{seed}/data.npz",
    output:
        model=RUN_DIR + "/model.pt",
        history=RUN_DIR + "/history.csv",
    log:
        log_path("train"),
    benchmark:
        RESULTS + "/benchmarks/train/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.tsv"
    params:
        dataset=lambda w: dataset_config(w.dataset),
        model=model_params,
        optimizer=optimizer_params,
        supervision=lambda w: w.supervision,
        seed=lambda w: int(w.seed),
        code=code("train"),
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/train.py"
