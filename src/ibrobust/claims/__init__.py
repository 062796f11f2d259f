"""Claims as data: what a study kind declares about its paper, and how a number is judged.

:mod:`ibrobust.claims.core` defines a claim (and gathers the vocabulary below for a study's
import); :mod:`ibrobust.claims.verdicts` the verdicts, :mod:`ibrobust.claims.sources` the
checked reading of a study's output files, :mod:`ibrobust.claims.measurement` our number,
:mod:`ibrobust.claims.rules` a verdict rule and how it decides, and
:mod:`ibrobust.claims.intervals` the intervals a measurement carries. Each study kind
that has claims declares them, and the column mapping of its outputs, in its package's
``claims`` module (``ibrobust.studies.<kind>.claims``, e.g.
:mod:`ibrobust.studies.prelu.claims`) with this vocabulary; the ledger that gathers
every study's claims is :mod:`ibrobust.ledger`, a layer above the studies.
"""
