"""The verdicts a claim can get, and the two a claim's ``compute`` raises instead of
returning a measurement (:class:`NotRun`, :class:`NotApplicable`)."""

from __future__ import annotations

HOLDS, WEAKER, FAILS = "holds", "holds weaker", "does not hold"
INCONCLUSIVE, NOT_APPLICABLE, NOT_RUN = "inconclusive", "not applicable", "not run"
VERDICTS = (HOLDS, WEAKER, INCONCLUSIVE, FAILS, NOT_APPLICABLE, NOT_RUN)
JUDGED = (HOLDS, WEAKER, INCONCLUSIVE, FAILS)  # verdicts decided on a measurement


class NotRun(Exception):  # noqa: N818  (a verdict, not an error)
    """Raised by a claim's ``compute`` when the outputs hold no rows to measure it on
    (e.g. a readout the study did not evaluate); the message is the reason."""


class NotApplicable(Exception):  # noqa: N818  (a verdict, not an error)
    """Raised by a claim's ``compute`` (or returned as a reason by its ``not_applicable``)
    when the study cannot test the claim by construction, whatever its numbers: e.g. one run
    where the claim needs an interval over runs, or a study configured to stop before the
    claimed regime. The message is the reason."""
