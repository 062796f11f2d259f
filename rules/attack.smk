# Attack evaluation on the test set over a radius grid ("main" curve or "scaling" sweep):
# `attack` reads the model through its own score (2-class models, on whose two heads every
# binary readout is the same score, and models judged on their fine labels);
# `attack_readouts_<study>` (one rule per study with `readouts`) reads a k-class model through
# every readout of its study's list in one job per (model, grid): an attack aiming at the fine
# labels (its kind's x-kind capabilities, ibrobust.attacks.suite.shared_across_readouts) runs once and is
# judged under every readout, the others once per readout; one table and summary per readout
# (attack/<grid>/<readout>/), so the readers are those of the per-readout jobs before. The job
# depends on the set of readouts: adding or dropping one reruns it (all readouts); reordering
# the list does not (outputs and params in sorted order; the library attacks in READOUTS order).
ATTACK_DIR = "results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/attack/{grid}"
ATTACK_LOG = "{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}.{grid}"


rule attack:
    input:
        data="results/datasets/{dataset}/seed{seed}/data.npz",
        model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
    output:
        tables=[f"{ATTACK_DIR}/robust_accuracy.csv"],
        summaries=[f"{ATTACK_DIR}/summary.json"],
    log:
        f"results/logs/attack/{ATTACK_LOG}.log",
    benchmark:
        f"results/benchmarks/attack/{ATTACK_LOG}.tsv"
    params:
        attacks=attack_params,
        radii=attack_radii,
        points=attack_points,
        task=attack_task,
        readouts=["sum"],
        seed=lambda w: int(w.seed),
        device=DEVICE,
        code=attack_code,
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=GPU_JOB,
    conda:
        "../envs/ibrobust.yaml"
    script:
        "../workflow_scripts/attack.py"


for _study in NET_STUDIES:
    _readouts = sorted(set(STUDIES[_study].get("readouts") or ()))
    if not _readouts:
        continue

    rule:
        name:
            f"attack_readouts_{_study}"
        input:
            data="results/datasets/{dataset}/seed{seed}/data.npz",
            model="results/{study}/{dataset}/{model}/{optimizer}/{supervision}/seed{seed}/model.pt",
        output:
            tables=[f"{ATTACK_DIR}/{ro}/robust_accuracy.csv" for ro in _readouts],
            summaries=[f"{ATTACK_DIR}/{ro}/summary.json" for ro in _readouts],
        log:
            f"results/logs/attack/{ATTACK_LOG}.readouts.log",
        benchmark:
            f"results/benchmarks/attack/{ATTACK_LOG}.readouts.tsv"
        wildcard_constraints:
            study=study_constraint(studies=[_study]),
            supervision="multiclass",  # ibrobust.studies.plan.readouts: k-class models only
        params:
            attacks=attack_params,
            radii=attack_radii,
            points=attack_points,
            task=attack_task,
            readouts=_readouts,
            seed=lambda w: int(w.seed),
            device=DEVICE,
            code=attack_code,
        threads: config["threads"]
        resources:
            mem_mb=4000,
            runtime=60,
            gpu=GPU_JOB,
        conda:
            "../envs/ibrobust.yaml"
        script:
            "../workflow_scripts/attack.py"
