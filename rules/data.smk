# Dataset preparation: synthetic cluster data, one draw per seed (study-independent).


rule cluster_data:
    output:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        meta="results/datasets/{dataset}/seed{seed}/meta.json",
    log:
        "results/logs/cluster_data/{dataset}/seed{seed}.log",
    benchmark:
        "results/benchmarks/cluster_data/{dataset}/seed{seed}.tsv"
    params:
        dataset=lambda w: dataset_config(w.dataset),
        seed=lambda w: int(w.seed),
        code=code("cluster_data"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/data.yaml"
    script:
        "../workflow_scripts/cluster_data.py"
