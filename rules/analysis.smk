# Lambda decomposition over the checkpoints, cosine matrix, feature-averaging index.


rule analyze:
    input:
        data=RESULTS + "/datasets/{dataset}/seed{seed}/data.npz",
        model=RUN_DIR + "/model.pt",
    output:
        lambdas=RUN_DIR + "/analysis/lambdas.csv",
        cosine=RUN_DIR + "/analysis/cosine.csv",
        summary=RUN_DIR + "/analysis/summary.json",
    log:
        log_path("analyze"),
    params:
        supervision=lambda w: w.supervision,
        code=code("analyze"),
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/analyze.py"
