"""Claims of Study MARGIN (Lyu & Li, ICLR 2020, as presented in J. Li's CSML 2024 and ITCS
2024 talks; docs/studies/margin.md, "Claims"), kind ``margin``: declared in ``claims.yaml``
beside this module (:mod:`ibrobust.claims.declared`); the measurements and the output tables
they read (``SOURCES``) are :mod:`ibrobust.studies.margin.measures`. A study that is not
enabled (the default: it needs MNIST) has its claims "not run" with the reason."""

from __future__ import annotations

from ibrobust.claims.core import Claim, StudyContext
from ibrobust.claims.declared import claims_file, load_claims
from ibrobust.studies.margin.measures import CONTEXT, MEASURES, SOURCES

__all__ = ["SOURCES", "claims"]  # what the ledger reads (ibrobust.ledger.table)


def claims(ctx: StudyContext) -> list[Claim]:
    return load_claims(claims_file(__file__), ctx, MEASURES, CONTEXT, "margin")
