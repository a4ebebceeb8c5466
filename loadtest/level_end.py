"""When an open-loop level stops sending: after its planned requests, or, with a steady-state length,
once it has also lasted ``multiple`` times the mean end-to-end latency of the requests completed so far.

A level must outlast the time its server takes to fill up: a queue that grows shows only after several
request lifetimes, and the lifetime at a given load is known only once requests complete (at high load
it is far longer than at low). The schedule caps the length (``LoadSpec.max_duration_s``).
"""

from __future__ import annotations

from loadtest.records import RequestRecord


class LevelEnd:
    """Feed completed records with ``add``; ``reached(k, offset)`` says whether the k-th arrival (at
    ``offset`` seconds into the level) is past the end."""

    def __init__(self, planned: int, multiple: float | None) -> None:
        self.planned, self.multiple = planned, multiple
        self.e2e_sum, self.completed = 0.0, 0

    def add(self, rec: RequestRecord) -> None:
        if rec.ok and rec.done_at is not None and not rec.warmup:
            self.e2e_sum += rec.done_at - rec.scheduled_at
            self.completed += 1

    def reached(self, k: int, offset: float) -> bool:
        if k < self.planned:
            return False
        if self.multiple is None:
            return True
        if self.completed == 0:  # nothing finished yet: the level's lifetime is unknown, keep going
            return False
        return offset >= self.multiple * self.e2e_sum / self.completed
