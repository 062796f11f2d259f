"""Where Study FA's claims come from (Li, Pan, Lyu, Li, ICLR 2025: slides and the ITCS 2024
talk): the scope the source states and the P2 tolerance (no figure of the source is read: its
synthetic robustness figure is not among the published texts the ledger checks)."""

from __future__ import annotations

from ibrobust.claims.citations import LI_2025, Citation

# ---- where the claims come from (Li, Pan, Lyu, Li, ICLR 2025: slides and ITCS 2024 talk) ----
SCOPE = (
    "full-batch GD (small learning rate eta = Theta(1/sqrt(d)), T = poly(d) steps), logistic "
    "loss, two-layer ReLU net with the second layer fixed, k orthogonal clusters with "
    "||mu_j|| = Theta(sqrt(d)), noise sigma = Theta(1), d large"
)


def cite(where: str, quote: str, scope: str = SCOPE) -> Citation:
    return Citation(LI_2025, where, quote, scope)


TOL = 0.10  # docs/studies/README.md, rule P2: a single number or a theory's constant, +-10 %
