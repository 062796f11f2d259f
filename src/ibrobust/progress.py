"""Progress of a long computation, told to a callable at most every ``every`` seconds.

The library never logs: a long loop takes a :class:`Progress` (or None) and says what it
does, and its caller decides what a report becomes (a workflow job passes its
``Job.progress_report``, which writes one log line per report). A loop that knows its work
adds its units (:meth:`Progress.expect`), names each unit as it starts (:meth:`begin`) and
counts it when done (:meth:`advance`); code inside a unit calls :meth:`tick` between its
batches (a PGD restart, an AutoAttack batch). Each of these reports when ``every`` seconds
have passed since the last report, and :meth:`advance` also at the last unit; the first
call reports too. So with ticks at most ``t`` seconds apart a report comes at least every
``every + t`` seconds: the default 20 s gives one at least every 30 s while no stretch
between two ticks takes over 10 s.

``report(done, total, what)``: units done, units expected so far, what runs now (e.g.
``pgd_ce argmax eps=2``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

Report = Callable[[int, int, str], object]
DEFAULT_EVERY = 20.0  # s between reports (at most one per interval)


class Progress:
    """Counts units of work and reports them, throttled by ``clock`` (seconds; a test
    passes a fake one). ``report`` None: counts and never reports."""

    def __init__(
        self,
        report: Report | None = None,
        total: int = 0,
        every: float = DEFAULT_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ):
        if every < 0:
            raise ValueError(f"every must be >= 0 s, got {every}")
        self.report = report
        self.total = int(total)
        self.done = 0
        self.what = ""
        self.every = float(every)
        self.clock = clock
        self._last: float | None = None  # clock at the last report

    def expect(self, units: int) -> None:
        """Add ``units`` to the work expected."""
        self.total += int(units)

    def begin(self, what: str) -> None:
        """A unit starts: ``what`` names it in the reports until the next one."""
        self.what = what
        self.tick()

    def advance(self, units: int = 1) -> None:
        """``units`` done; the last one is always reported."""
        self.done += int(units)
        self.tick(force=self.done >= self.total)

    def tick(self, force: bool = False) -> None:
        """Report if ``every`` seconds have passed since the last report (or ``force``)."""
        if self.report is None:
            return
        now = self.clock()
        if not force and self._last is not None and now - self._last < self.every:
            return
        self._last = now
        self.report(self.done, self.total, self.what)


def ticker(progress: Progress | None) -> Callable[[], None] | None:
    """``progress.tick`` (None without a progress): what batched code calls between batches."""
    return None if progress is None else progress.tick
