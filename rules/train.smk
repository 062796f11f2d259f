# Training of one model (any registry kind, any optimizer, either supervision), or the
# construction of the hand-built robust reference.


rule train:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
    output:
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
        history="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/history.csv",
        metrics="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/metrics.json",
    log:
        "results/logs/train/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.tsv"
    params:
        model=model_params,
        optimizer=optimizer_params,
        supervision=lambda w: w.supervision,
        seed=lambda w: int(w.seed),
        device=DEVICE,
        code=train_code,
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=GPU_JOB,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/train.py"
