"""When an open-loop level stops sending: after its planned requests, or, with a steady-state length,
once it has also lasted ``multiple`` times the mean request lifetime so far; past ``soft_max_s``, once it has
lasted JUDGED_LIFETIMES of them (what loadtest.steady needs, and one more), as a certifying soak does.

A level must outlast the time its server takes to fill up: a queue that grows shows only after several
request lifetimes, and the lifetime at a given load is known only once requests complete (at high load
it is far longer than at low). The lifetime so far counts the requests completed (send to end) and those
still running by their age: the early completions are the short ones, and counted alone they stopped a soak
at 79 s whose requests then lived 3.8 times less than its arrivals lasted (docs/certification.md). The
schedule caps the length (``LoadSpec.max_duration_s``).

Past its first rate window (loadtest.arrivals) a steady-state level ends only where a window starts: each window
sends exactly the nominal rate, so a level cut inside one would send the rate its partial draw happened to have.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadtest.records import RequestRecord
from loadtest.steady import MIN_LIFETIMES

JUDGED_LIFETIMES = MIN_LIFETIMES + 1  # a window this many lifetimes long is judged steady or not, not refused


class LevelEnd:
    """Feed each send with ``sent`` and each finished record with ``add``; ``reached(k, offset, now)`` says
    whether the k-th arrival (at ``offset`` seconds into the level, ``now`` on the records' clock) is past the
    end. Without ``now`` only completed requests count. ``window_starts``: the schedule's windows' first arrivals
    (loadtest.arrivals.window_starts; None: free gaps, any arrival may end a level)."""

    def __init__(
        self,
        planned: int,
        multiple: float | None,
        soft_max_s: float | None = None,
        window_starts: Sequence[int] | None = None,
    ) -> None:
        self.planned, self.multiple, self.soft_max_s = planned, multiple, soft_max_s
        starts = list(window_starts or ())
        # a level may end anywhere up to its first window's end, then only where a window starts
        self.first_window_end = starts[1] if len(starts) > 1 else None
        self.window_starts = frozenset(starts)
        self.e2e_sum, self.completed = 0.0, 0
        self.sent_count, self.sent_sum = 0, 0.0  # the level's sends and the sum of their scheduled times
        self.ended_count, self.ended_sum = 0, 0.0  # of those, the ones that ended (completed or failed)

    def sent(self, at: float) -> None:
        self.sent_count += 1
        self.sent_sum += at

    def add(self, rec: RequestRecord) -> None:
        if rec.warmup:
            return
        self.ended_count += 1
        self.ended_sum += rec.scheduled_at
        if rec.ok and rec.done_at is not None:
            self.e2e_sum += rec.done_at - rec.scheduled_at
            self.completed += 1

    def lifetime(self, now: float | None = None) -> float | None:
        """Mean seconds in the system so far: completed requests whole, running ones by their age at ``now``."""
        if self.completed == 0:  # nothing finished yet: the level's lifetime is unknown
            return None
        if now is None:
            return self.e2e_sum / self.completed
        running = self.sent_count - self.ended_count
        ages = running * now - (self.sent_sum - self.ended_sum)  # the running requests' sends are in sent_sum only
        return (self.e2e_sum + ages) / (self.completed + running)

    def may_end(self, k: int) -> bool:
        """Whether a steady-state level may stop before its k-th arrival: within its first window (a level
        shorter than a window ends anywhere), past it only at a window's start (every window sent whole)."""
        return self.first_window_end is None or k <= self.first_window_end or k in self.window_starts

    def reached(self, k: int, offset: float, now: float | None = None) -> bool:
        if k < self.planned:
            return False
        if self.multiple is None:
            return True
        if not self.may_end(k):
            return False
        lifetime = self.lifetime(now)
        if lifetime is None:
            return False
        if self.soft_max_s is not None and offset >= self.soft_max_s:
            return offset >= min(self.multiple, JUDGED_LIFETIMES) * lifetime
        return offset >= self.multiple * lifetime
