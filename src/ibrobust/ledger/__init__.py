"""The claims ledger: every claim of every study in the config, measured on its outputs.

* :mod:`~ibrobust.ledger.table` - the ledger table: each study kind's claims module
  (``ibrobust.studies.<kind>.claims``, found through :data:`ibrobust.kinds.STUDIES`)
  evaluated on the study's outputs, one row per claim with our number and a verdict;
* :mod:`~ibrobust.ledger.render` - the table as markdown, one HTML page, the README
  excerpt, and a ledger CSV read back;
* :mod:`~ibrobust.ledger.trend` - each claim's trend over the rungs of a scale ladder
  (:class:`ibrobust.studies.expansion.Rung`).

It sits above the studies (it reads their claims and their expanded config); the
vocabulary the studies declare claims with is :mod:`ibrobust.claims`, below them.
"""
