"""Where Study FA's claims come from (Li, Pan, Lyu, Li, ICLR 2025: slides and the ITCS 2024
talk): the scope the source states, and the ledger's readings of its synthetic figure."""

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


# The ledger's reading of the paper's synthetic robustness figure (d = 3072, k = 10):
# 2-class training 100 % robust to radius ~12, collapse by ~18; 10-class (argmax readout)
# to ~34, collapse by ~44. The 50 % point of each curve lies between its two readings.
BINARY_READING = (12.0, 18.0)
KCLASS_READING = (34.0, 44.0)
PAPER_D, PAPER_K = 3072, 10
TOL = 0.10  # docs/studies/README.md, rule P2: a single number or a theory's constant, +-10 %
