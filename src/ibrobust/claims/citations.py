"""Where a claim comes from: the published documents the ledger checks, and a claim's citation.

Every :class:`~ibrobust.claims.core.Claim` carries a :class:`Citation`: the document (a
reference a reader finds without this repository), the place in it (section, theorem,
figure, table, or a talk's slide title), a short quote of the sentence or number the claim
tests, and the scope the source states it for (algorithm, regime, model, readout). A quote
is verbatim; a number the source shows only in a figure is given as ``[figure reading] ...``
with how it was read, never dressed up as a quote. Where the source's text lost its math,
the quote stays the raw text and :mod:`ibrobust.claims.restorations` gives the ledger its
restored form. ``tests/unit/test_claims_citations.py`` refuses a claim without one.
"""

from __future__ import annotations

from dataclasses import dataclass

FIGURE_READING = "[figure reading]"  # a quote field that reads a figure rather than quoting


@dataclass(frozen=True)
class Document:
    """One source document: ``key`` (short, for tables) and the full reference."""

    key: str
    reference: str


@dataclass(frozen=True)
class Citation:
    document: Document
    where: str
    quote: str
    scope: str

    def __post_init__(self) -> None:
        for name in ("where", "quote", "scope"):
            if not str(getattr(self, name)).strip():
                raise ValueError(f"a citation needs a non-empty {name!r} ({self.document.key})")

    @property
    def short(self) -> str:
        """``Tsilivis et al. 2024, Sec. 5.1, Fig. 2 (right)``: document and place."""
        return f"{self.document.key}, {self.where}"


TSILIVIS_2024 = Document(
    "Tsilivis et al. 2024",
    "N. Tsilivis, N. Frank, N. Srebro, J. Kempe. The Price of Implicit Bias in Adversarially "
    "Robust Generalization. NeurIPS 2024 (arXiv:2406.04981).",
)
LI_2025 = Document(
    "Li et al. 2025",
    "B. Li, Z. Pan, K. Lyu, J. Li. Feature Averaging: An Implicit Bias of Gradient Descent "
    "Leading to Non-Robustness in Neural Networks. ICLR 2025 (arXiv:2410.10322); slides of the "
    "ICLR 2025 presentation and of J. Li's ITCS 2024 talk.",
)
MIN_VIDAL_2024 = Document(
    "Min & Vidal 2024",
    "H. Min, R. Vidal. Can Implicit Bias Imply Adversarial Robustness? ICML 2024 (poster; "
    "arXiv:2405.15942).",
)
LYU_LI_2020 = Document(
    "Lyu & Li 2020",
    "K. Lyu, J. Li. Gradient Descent Maximizes the Margin of Homogeneous Neural Networks. "
    "ICLR 2020 (arXiv:1906.05890), as presented in J. Li's talks 'Implicit Bias and "
    "Adversarial Robustness in Deep Learning' (CSML 2024) and at ITCS 2024 (slides).",
)
DOCUMENTS = (TSILIVIS_2024, LI_2025, MIN_VIDAL_2024, LYU_LI_2020)
