# Lambda decomposition over the checkpoints, cosine matrix, feature-averaging index.


rule analyze:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
    output:
        lambdas="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/analysis/lambdas.csv",
        cosine="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/analysis/cosine.csv",
        summary="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/analysis/summary.json",
    log:
        "results/logs/analyze/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.log",
    params:
        supervision=lambda w: w.supervision,
        code=code("analyze"),
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../envs/analysis.yaml"
    script:
        "../workflow_scripts/analyze.py"
