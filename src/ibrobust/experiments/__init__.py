"""Experiment glue: the problem grid, metrics tables and cross-run summaries of a study.

Thin layers over ``data`` / ``training`` / ``analysis`` that turn one workflow job's
inputs into tidy tables (one row per trained problem); no snakemake, no mlflow.
"""
