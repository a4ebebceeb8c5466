"""``--time-budget`` at the moment a trial's measurement would begin.

The study stops starting trials once a typical trial would overrun the budget (tuner.study). With
overlapped startups (and one trial per GPU) a trial's server may be up long before its device is free to
measure it: the second trial on a device waits for the first's measurement, so it is measured past the
budget, or is cut by a hard limit after minutes of work that count for nothing (seen on the H200: every
call's last trial per device). So a trial checks again when its measurement would begin: if a typical
measurement of this run no longer fits in what is left of the budget, the trial is given up — its server
stopped, the trial stored as interrupted (not counted; ``--resume`` runs another in its place).
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator


class OverBudget(Exception):
    """Raised by a trial whose measurement would overrun the time budget (not a bug, not a result)."""


class MeasureDeadline:
    """The budget's end and how long this run's measurements took (shared by the trial threads)."""

    def __init__(self, budget_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if budget_s <= 0:
            raise ValueError(f"budget_s must be positive, got {budget_s}")
        self._clock = clock
        self._ends = clock() + budget_s
        self._took: list[float] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        """Times one measurement (the capacity search, from its first request to its verdict); one that
        raises (Ctrl-C) did not finish and is not recorded."""
        began = self._clock()
        yield
        with self._lock:
            self._took.append(self._clock() - began)

    def overrun(self) -> str | None:
        """Why a measurement starting now would overrun the budget, or None (also when none finished yet:
        the first measurements of a run are never given up, so a run always learns what one takes)."""
        with self._lock:
            if not self._took:
                return None
            typical = statistics.median(self._took)
        left = self._ends - self._clock()
        if typical <= left:
            return None
        return (f"time budget: {max(left, 0.0):.0f} s left, a measurement takes {typical:.0f} s here "
                f"(median of {len(self._took)}); given up before measuring, resume to run it")
