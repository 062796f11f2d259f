"""``snakemake decide``: spend a CPU budget where it settles verdicts, with the ledger's
error level kept across repeated looks.

One concept per module: the error control across looks (:mod:`.spending`) and its
simulation (:mod:`.simulation`), the measured cost of a unit (:mod:`.cost`), a study's unit
lists (:mod:`.units`), the plan (:mod:`.planner`), and the ledger judged at each look's
spent level with the record of the looks (:mod:`.looks`). Pure functions; nothing here
imports snakemake or mlflow. The existing :func:`ibrobust.claims.rules.decide` decides one
verdict; this package plans where to add units (the planner's functions say *plan*).
"""
