"""What a claim is: a :class:`Claim` is data - an id, the claim in one sentence, its source
(:mod:`ibrobust.claims.citations`), the paper's number(s), how our number is computed from a
study's outputs (in words), a :class:`~ibrobust.claims.rules.Rule` (a strong and a weak
region, stated in words, derived from the source), and ``compute``: a pure function from the
study's loaded outputs to a :class:`~ibrobust.claims.measurement.Measurement` (one value per
unit - seed, dataset draw, run - and the interval around their mean). :func:`restricted`
computes a study's claims on one cell of it.

The vocabulary a study declares its claims with lives beside this module, one concept each:
the verdicts (:mod:`ibrobust.claims.verdicts`), a study's output files and their columns
(:mod:`ibrobust.claims.sources`), our number (:mod:`ibrobust.claims.measurement`), the rule
and the verdict it gives (:mod:`ibrobust.claims.rules`), the form of the source's statement
and the rule family it fixes (:mod:`ibrobust.claims.forms`). It is importable from here too
(``__all__``): a study's claims module needs one import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from ibrobust.claims import forms
from ibrobust.claims.citations import Citation
from ibrobust.claims.forms import (
    ASYMPTOTIC,
    BOUND,
    DIRECTION,
    EQUIVALENCE,
    EXISTENTIAL,
    UNIVERSAL,
    along,
    number_or_direction,
    per_cell,
    trend,
)
from ibrobust.claims.intervals import LEVEL
from ibrobust.claims.measurement import Measurement, pooled_slope
from ibrobust.claims.rules import (
    Decision,
    Fragility,
    Rule,
    at_least,
    at_most,
    between,
    decide,
    fragility,
)
from ibrobust.claims.sources import Check, Column, Source, SummaryError, load_source, not_above
from ibrobust.claims.verdicts import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    JUDGED,
    NOT_APPLICABLE,
    NOT_RUN,
    VERDICTS,
    WEAKER,
    NotApplicable,
    NotRun,
)

__all__ = [
    # the claim (this module)
    "Claim", "Compute", "StudyContext", "restricted",
    # the vocabulary a study declares its claims with, from the modules that define it
    "FAILS", "HOLDS", "INCONCLUSIVE", "JUDGED", "NOT_APPLICABLE", "NOT_RUN", "VERDICTS", "WEAKER",
    "NotApplicable", "NotRun", "Check", "Column", "Source", "SummaryError", "load_source",
    "not_above", "Measurement", "pooled_slope", "Decision", "Fragility", "Rule", "at_least",
    "at_most", "between", "decide", "fragility",
    "ASYMPTOTIC", "BOUND", "DIRECTION", "EQUIVALENCE", "EXISTENTIAL", "UNIVERSAL", "per_cell",
    "trend", "number_or_direction", "along",
]  # fmt: skip


@dataclass(frozen=True)
class StudyContext:
    """What a claim may read besides the study's outputs: the study's name and config block,
    and the config entries of the datasets and models it uses."""

    name: str
    config: Mapping[str, Any]
    datasets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    optimizers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


Compute = Callable[[Mapping[str, pd.DataFrame], StudyContext], Measurement]


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as the ledger checks it (see the module docstring).

    ``form``: the logical form of the source's statement (:data:`ibrobust.claims.forms.FORMS`),
    which fixes the rule family (checked here) and the measurement kind (checked by
    :meth:`judge`);
    ``citation``: where it comes from (document, place, quote, scope); ``derivation``:
    how ``rule``'s strong and weak regions follow from the quote (the source's number within
    its own spread or the theory's constant for the strong region, the same direction for the
    weak one; a trend judged over the grid the source shows);
    ``sources``: the names of the study's :class:`Source` s that ``compute`` reads;
    ``setting``: what the row is about within the study (dataset, readout, regime);
    ``applies``: None, or a function of the context returning why the claim cannot be run
    in this configuration (e.g. the MNIST half is not configured): "not run";
    ``not_applicable``: None, or a function of the context returning why the study cannot
    test the claim by construction (e.g. it stops before the claimed regime): "not
    applicable" (``compute`` may also raise :class:`NotApplicable`); ``cost``: what judging
    the claim would take where no study of the default config can (shown once in the
    ledger, :func:`ibrobust.ledger.table.one_verdict_per_claim`); ``measure_call``: the
    named measure and its arguments as the claim file calls it (``column(p=3.0,
    col=clean_acc)``; :mod:`ibrobust.claims.declared`), for the tables a reader sees."""

    id: str
    claim: str
    citation: Citation
    derivation: str
    paper: str
    measure: str
    rule: Rule
    compute: Compute
    form: str
    sources: tuple[str, ...] = ("summary",)
    setting: str = ""
    applies: Callable[[StudyContext], str | None] | None = None
    not_applicable: Callable[[StudyContext], str | None] | None = None
    cost: str = ""
    measure_call: str = ""

    def __post_init__(self) -> None:
        if not self.derivation.strip():
            raise ValueError(f"claim {self.id}: a rule needs its derivation from the source")
        forms.check_rule(self.id, self.form, self.rule)

    def verdict(self, m: Measurement, level: float = LEVEL) -> Decision:
        """The verdict of the rule on ``m`` under the claim's form (FormError when ``m`` is
        not a kind of measurement the form may be judged on)."""
        forms.check_measurement(self.id, self.form, m)
        return forms.judge(self.form, self.rule, m, level)

    def fragility(self, m: Measurement, level: float = LEVEL) -> Fragility:
        """Whether the verdict survives leaving out any one unit, judged under the form."""
        return fragility(
            self.rule, m, level, judge=lambda r, sub, lv: forms.judge(self.form, r, sub, lv)
        )


def testable_only_if(testable: bool, reason: str) -> Callable[[StudyContext], str | None] | None:
    """A claim's ``not_applicable`` for a scope fixed when the claim is built (e.g. by the
    study's k): None where the study can test it, else a function returning ``reason``."""
    return None if testable else (lambda ctx: reason)


def restricted(
    claims: Sequence[Claim],
    cell: Mapping[str, str],
    keep: Callable[[pd.DataFrame], pd.Series] | None = None,
) -> list[Claim]:
    """The claims computed on one cell of a study (e.g. ``{"model": "prelu_p1"}``): every
    source with the cell's columns is cut to the cell's rows, plus the rows ``keep`` marks
    (e.g. the robust reference's, shared by every cell); the cell joins the setting."""

    def cut(df: pd.DataFrame) -> pd.DataFrame:
        mask = pd.Series(True, index=df.index)
        for col, value in cell.items():
            if col in df:
                mask &= df[col] == value
        return df[mask | keep(df)] if keep is not None else df[mask]

    def on_cell(compute: Compute) -> Compute:
        return lambda src, ctx: compute({k: cut(v) for k, v in src.items()}, ctx)

    tag = ", ".join(cell.values())
    return [replace(c, setting=f"{c.setting}, {tag}", compute=on_cell(c.compute)) for c in claims]
