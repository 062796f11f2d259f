# Targets: one rule per study, named after it (`snakemake fa`, `snakemake fa_sign` for a
# study added in an overlay); `rule all` collects the enabled studies. The built-in studies'
# names stay targets even when a config drops them (then they build nothing).

for _study in sorted(set(STUDIES) | {"fa", "fa_images", "price_linear", "prelu"}):

    rule:
        name:
            _study
        input:
            study_outputs(_study) if _study in STUDIES else [],
