"""ibrobust: the math behind the implicit-bias / adversarial-robustness workflow.

One concept per module; nothing here imports snakemake or mlflow. Sub-packages:
``data`` (dataset generators), ``models``, ``training``, ``attacks``, ``analysis``,
``plotting``; plus ``seeding`` (one way to make generators), ``io`` (atomic writes),
``config`` (schema validation and typed configs) and ``provenance`` (hashes of code
and config so the workflow reruns exactly what a change touches).
"""

__version__ = "0.1.0"
