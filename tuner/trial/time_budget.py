"""``--time-budget``: one clock for the whole run, asked at two moments.

Before a trial starts (tuner.trial.scheduler): no new trial once a typical (median) trial of this run would
overrun what is left. When a trial's measurement would begin (tuner.trial.device_rules): with overlapped
startups (and one trial per GPU) a trial's server may be up long before its device is free to measure
it — the second trial on a device waits for the first's measurement — so it would be measured past the
budget, or cut by a hard limit after minutes of work that count for nothing (seen on the H200: every
call's last trial per device). If a typical measurement of this run no longer fits in what is left, the
trial is given up: its server stopped, the trial stored as interrupted (not counted; ``--resume`` runs
another in its place).
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


class OverBudget(Exception):
    """Raised by a trial whose measurement would overrun the time budget (not a bug, not a result).
    ``timeline``: the trial's phases so far (tuner.trial.runner), kept in the study: its server was up."""

    def __init__(self, why: str, timeline: dict[str, Any] | None = None) -> None:
        super().__init__(why)
        self.timeline = timeline


class TimeBudget:
    """The budget's end and how long this run's measurements took (shared by the trial threads)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if seconds <= 0:
            raise ValueError(f"the time budget must be positive, got {seconds} s")
        self.seconds = seconds
        self._clock = clock
        self._ends = clock() + seconds
        self._took: list[float] = []
        self._lock = threading.Lock()

    def left(self) -> float:
        """Seconds until the budget's end (negative past it)."""
        return self._ends - self._clock()

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
        left = self.left()
        if typical <= left:
            return None
        return (
            f"time budget: {max(left, 0.0):.0f} s left, a measurement takes {typical:.0f} s here "
            f"(median of {len(self._took)}); given up before measuring, resume to run it"
        )
