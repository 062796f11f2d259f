"""ibrobust: the math behind the implicit-bias / adversarial-robustness workflow.

One concept per module; nothing here imports snakemake or mlflow. The packages form
layers, high to low (pyproject.toml's import-linter contract; CONTRIBUTING.md):
``config`` (schema, validation) > ``ledger`` (the claims ledger) > ``studies`` (one package
per study kind; the expanded config) > ``stages`` (fit, attack, tabulate one run) |
``claims`` (claims as data) > ``training`` > ``analysis`` > ``attacks`` > ``models`` |
``data`` | ``optimizers`` | ``plotting`` > ``updates`` (update rules) > ``kinds`` (the
registries) | ``seeding`` | ``norms`` | ``io`` | ``provenance`` (hashes of code and config
so the workflow reruns exactly what a change touches) > ``errors``.
"""

__version__ = "0.1.0"
