"""The generic network stages every network study shares, one job each.

* :mod:`~ibrobust.stages.networks` - fit one run: a dataset, a ``models`` entry, an
  ``optimizers`` entry, a supervision and a seed -> a saved model, its history, a few scalars;
* :mod:`~ibrobust.stages.robustness` - attack one run: every attack over a radius grid,
  through each readout, with the worst case, critical radii and clean accuracy;
* :mod:`~ibrobust.stages.tables` - tabulate: per-readout rows and mean/std summaries the
  studies' tables share.

Thin layers over ``data`` / ``training`` / ``attacks`` / ``analysis``; the studies
(:mod:`ibrobust.studies`) plan which runs exist and read these stages' outputs. No
snakemake, no mlflow.
"""
