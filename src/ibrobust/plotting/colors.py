"""Colours shared by the figures and the HTML ledger (no matplotlib import here)."""

from __future__ import annotations

# one colour per verdict of the claims ledger (ibrobust.claims.verdicts.VERDICTS)
VERDICT_COLORS = {
    "holds": "#1a7f37",
    "holds weaker": "#9a6700",
    "inconclusive": "#6e7781",
    "does not hold": "#cf222e",
    "not applicable": "#8250df",
    "not run": "#afb8c1",
}
