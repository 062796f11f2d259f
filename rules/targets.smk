# Targets: one per study kind's figure set; `rule all` collects the enabled studies.


rule fa:
    input:
        study_outputs("fa") if "fa" in STUDIES else [],


rule fa_images:
    input:
        study_outputs("fa_images") if "fa_images" in STUDIES else [],


rule price_linear:
    input:
        study_outputs("price_linear") if "price_linear" in STUDIES else [],


rule prelu:
    input:
        study_outputs("prelu") if "prelu" in STUDIES else [],
