# Training (or, for the robust reference, construction) of one model.


rule train:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
    output:
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
        history="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/history.csv",
    log:
        "results/logs/train/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.tsv"
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
        "../envs/train.yaml"
    script:
        "../workflow_scripts/train.py"
