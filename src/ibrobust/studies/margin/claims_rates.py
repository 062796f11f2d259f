"""Study MARGIN's rate claims (Lyu & Li 2020, the flow's loss and norm rates), on the
constant-step runs; part of the catalog :mod:`ibrobust.studies.margin.claims`."""

from __future__ import annotations

import numpy as np

from ibrobust.claims.citations import LYU_LI_2020, Citation
from ibrobust.claims.core import ASYMPTOTIC, Claim, along, at_least, between
from ibrobust.studies.margin.measures import CONSTANT, rate_ratio, run_column

TOL = 0.10  # docs/studies/README.md, rule P2
FLOW = (
    "gradient flow (Clarke subdifferential) on an L-homogeneous network, exponential or "
    "logistic loss, after the data is separated (t > t0)"
)
RATES = Citation(
    LYU_LI_2020,
    "CSML 2024 talk '# Implicit Bias: Margin Maximization'",
    "$$\\mathcal{L}(t) = \\Theta \\left( \\frac{1}{t(\\log t)^{2-2/L}} \\right) \\quad "
    "\\text{and} \\quad \\rho = \\Theta((\\log t)^{1/L}).$$",
    FLOW,
)


def rate_claims() -> list[Claim]:
    """The flow's loss and norm rates, on the constant-step runs."""
    return [
        Claim(
            id="margin.loss_rate",
            form=ASYMPTOTIC,
            setting="constant small step, the last decade of steps",
            claim="After separation the loss falls as L(t) = Theta(1 / (t (log t)^(2 - 2/L))).",
            citation=RATES,
            derivation="To the order the theorem fixes, ln(1/L) = ln t + c ln ln t + const "
            "(c = 2 - 2/L), whose log-log slope -1 - c / ln t drifts along any finite window; "
            "measured as the least-squares slope of ln L on ln t over the run's last decade of "
            "steps (t = step x lr, the flow's time) against the theory fitted the same way: "
            "the least-squares slope of -(ln t + c ln ln t) on ln t over the same t points. "
            "Strong (P2): their ratio in [0.9, 1.1]. Weak (the same direction, a power-law "
            "fall): > 0.",
            paper="L(t) = Theta(1/(t (log t)^(2-2/L)))",
            measure="loss_rate_slope / loss_rate_theory per constant-step run",
            rule=between(
                "measured / theory slope",
                (1 - TOL, 1 + TOL),
                (0.0, np.inf),
                strict=True,
                basis="the quote's exponents: L(t) = Theta(1 / (t (log t)^(2 - 2/L))) fixes "
                "the slope of ln L on ln t to -1 - (2 - 2/L) / ln t, whatever its constant",
            ),
            compute=along(rate_ratio("loss_rate"), "ln t over the run's last decade of steps"),
        ),
        Claim(
            id="margin.norm_rate",
            form=ASYMPTOTIC,
            setting="constant small step, the last decade of steps",
            claim="After separation the parameter norm grows as rho = Theta((log t)^(1/L)).",
            citation=RATES,
            derivation="Theta((log t)^(1/L)) fixes the order of growth, not a constant, and "
            "a finite window does not fix the local slope either: with rho^L = log(1/L) / "
            "gamma~ and log(1/L) = ln t + c ln ln t + C (c = 2 - 2/L), the slope of ln rho on "
            "ln ln t depends on the additive C (which the theory leaves free) and on the "
            "normalized margin gamma~, still growing over the window, both of which flatten "
            "it at reachable t. (The loss rate's slope on ln t does not depend on C: "
            "margin.loss_rate keeps the theory's exponents.) Only the direction follows "
            "(asymptotic form, P5 on the trend): the least-squares slope of ln rho on ln ln t "
            "over the run's last decade of steps > 0, the norm growing along t.",
            paper="rho = Theta((log t)^(1/L))",
            measure="norm_rate_slope per constant-step run: the least-squares slope of ln rho "
            "on ln ln t over the last decade of steps",
            rule=at_least("slope of ln rho on ln ln t", 0.0, 0.0, strict=True),
            compute=along(
                run_column("norm_rate_slope", CONSTANT), "ln ln t over the run's last decade"
            ),
        ),
    ]
