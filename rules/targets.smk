# Targets: one rule per study, named after it (`snakemake fa`, `snakemake fa_sign` for a
# study added in an overlay); `rule all` collects the default target's studies (only_studies,
# else those enabled). Each study's outputs come from its kind (ibrobust.studies).

for _study in sorted(STUDIES):

    rule:
        name:
            _study
        input:
            study_outputs(_study),


# `snakemake --cores all reproduce --config data_root=DIR`: every study of the config, enabled
# or not (each with all its outputs, e.g. PRELU's MNIST half), and the full claims ledger
# over them. Studies of kinds registered later join by themselves (the registry, not this
# file, knows them). The image studies read data_root: when the data is missing the data
# preflight (onstart) stops the run, naming data_root, before any job starts.
rule reproduce:
    input:
        [f for s in BASE_STUDIES for f in study_outputs(s)],
        CLAIMS_LEDGER_ALL,


# `snakemake --cores all scale --config data_root=DIR`: every rung of every study's scale
# ladder (its `scale` block: the study <name>@<key>=<value> per rung) with all its outputs,
# their claims ledger and each claim's trend over the rungs (results/claims/scale/); not
# part of reproduce.
rule scale:
    input:
        [f for s in SCALE_RUNGS for f in study_outputs(s)],
        CLAIMS_LEDGER_SCALE,
        SCALE_TRENDS,
