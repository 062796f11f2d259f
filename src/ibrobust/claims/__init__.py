"""The claims ledger: each study's published claims as data, measured on its outputs.

:mod:`ibrobust.claims.core` defines a claim, a measurement, a verdict rule and the checked
reading of a study's output files; each study kind that has claims declares them, and the
column mapping of its outputs, in its package's ``claims`` module
(``ibrobust.studies.<kind>.claims``, e.g. :mod:`ibrobust.studies.prelu.claims`);
:mod:`ibrobust.claims.ledger` finds them through the study registry and builds the table.
"""
