# Targets: one per study kind's figure set; `rule all` collects the enabled studies.


rule fa:
    input:
        study_outputs("fa") if "fa" in STUDIES else [],
