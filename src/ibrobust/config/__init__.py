"""Configuration: the schema and its validation (:mod:`~ibrobust.config.validate`), what a
schema lets through (:mod:`~ibrobust.config.values`), config files read strictly
(:mod:`~ibrobust.config.overlay`) and the configuration reference
(:mod:`~ibrobust.config.docs`)."""

from ibrobust.config.validate import (  # noqa: F401  (the package's names)
    NORMS,
    ConfigError,
    Rung,
    attack_applies,
    attack_norm,
    check_adversarial,
    config_error,
    dataset_sweeps,
    derived_datasets,
    derived_optimizers,
    expand_scale,
    grid_attacks,
    load_schema,
    radius_grids,
    rung_name,
    scale_rungs,
    study_task,
    sweep_dataset,
    typed,
    validate_config,
    variant_name,
)
