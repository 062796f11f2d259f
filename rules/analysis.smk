# Analysis of one trained model: cosines of its neurons with the class features (any model),
# and the lambda decomposition over the checkpoints (two-layer nets on cluster data).


rule analyze:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
    output:
        cosine="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/analysis/cosine.csv",
        summary="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/analysis/summary.json",
    log:
        "results/logs/analyze/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.log",
    params:
        supervision=lambda w: w.supervision,
        code=analyze_code,
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/analyze.py"


rule decompose:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
    output:
        lambdas="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/analysis/lambdas.csv",
        summary="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/analysis/decomposition.json",
    log:
        "results/logs/decompose/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.log",
    params:
        supervision=lambda w: w.supervision,
        code=code("decompose"),
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/decompose.py"
