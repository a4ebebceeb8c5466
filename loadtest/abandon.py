"""Abandon a load level as soon as its SLO is certainly lost (the tuner's capacity search uses this to
spend no time finishing a level it already knows is over capacity).

An ``xxx_pNN`` SLO over N requests is judged on the linear-interpolated percentile
(``loadtest.report.percentile``): it sits at position p = (N − 1)·NN/100 of the sorted values, so
N − 1 − ⌊p⌋ requests may miss (failed requests count as misses) and the percentile can still hold
(it then interpolates between a request within the limit and one above it). One more miss puts both
neighbours of p above the limit: no later request can bring pNN back, so the level is lost.
Only ttft/tpot/e2e are judged per request here (ITL SLOs never abandon a level: its percentile is
over tokens, not requests). A request with no first token past a TTFT limit is a certain miss of it, counted
while still in flight (``InFlight``): at a high load its decode would take seconds more. N is the most requests
the level may send: a steady-state level
(``LoadSpec.steady_e2e_multiple``) goes on past its planned count for as long as its schedule allows, so a
count judged on the planned requests alone could end a level whose percentile would still hold
(docs/certification.md, "Levels past their cap").
"""

from __future__ import annotations

import asyncio
import math
from collections import deque

from loadtest.client import Prepared
from loadtest.dist import percentile_position
from loadtest.metrics import _meets, timings
from loadtest.records import ABANDONED, Chunk, RequestRecord
from loadtest.slo import SLO


def allowed_misses(planned: int, pct: float) -> int:
    """How many of ``planned`` requests may miss while the pct-th percentile can still be within the limit."""
    if planned <= 0:
        return 0
    return planned - 1 - math.floor(percentile_position(planned, pct))


class MissCounter:
    """Feed completed records with ``add``; it returns True once some SLO can no longer be met."""

    def __init__(self, slos: tuple[SLO, ...], planned: int) -> None:
        self.slos = tuple(s for s in slos if s.metric in ("ttft", "tpot", "e2e"))
        self.allowed = {s.key: allowed_misses(planned, s.percentile) for s in self.slos}
        self.misses = dict.fromkeys(self.allowed, 0)
        self.lost_slo: str | None = None
        self.early: set[tuple[int, str]] = set()  # (request index, SLO key) counted while the request was in flight

    @property
    def first_token_limit_ms(self) -> float | None:
        """The lowest TTFT limit: past it, a request in flight with no first token yet is a certain miss."""
        return min((s.limit_ms for s in self.slos if s.metric == "ttft"), default=None)

    def overdue(self, index: int, age_ms: float) -> bool:
        """Request ``index`` has had no first token for ``age_ms`` since its scheduled send: a miss of each TTFT SLO
        whose limit that passes, counted now and not again when it ends."""
        for slo in self.slos:
            if slo.metric == "ttft" and age_ms > slo.limit_ms and (index, slo.key) not in self.early:
                self.early.add((index, slo.key))
                self._miss(slo.key)
        return self.lost_slo is not None

    def add(self, rec: RequestRecord) -> bool:
        if rec.warmup or not self.slos:
            return self.lost_slo is not None
        t = timings(rec) if rec.ok and rec.chunks else None
        for slo in self.slos:
            if (rec.index, slo.key) not in self.early and (t is None or not _meets(t, slo)):
                self._miss(slo.key)
        return self.lost_slo is not None

    def _miss(self, key: str) -> None:
        self.misses[key] += 1
        if self.misses[key] > self.allowed[key] and self.lost_slo is None:
            self.lost_slo = key


class InFlight:
    """A level's requests in flight, oldest first, each looked at once when it passes the lowest TTFT limit: one with
    no first token by then is a certain miss (``MissCounter.overdue``), counted before it ends (its decode later)."""

    def __init__(self, counter: MissCounter) -> None:
        self.counter = counter
        self.limit_s = (counter.first_token_limit_ms or 0.0) / 1000.0
        self.waiting: deque[tuple[int, float, list[Chunk], asyncio.Task[RequestRecord]]] = deque()

    def sent(self, index: int, scheduled_at: float, events: list[Chunk], task: asyncio.Task[RequestRecord]) -> None:
        self.waiting.append((index, scheduled_at, events, task))

    def overdue(self, now: float) -> bool:
        """Count the requests past the limit with no first token at ``now``; True once an SLO is lost."""
        while self.waiting and now - self.waiting[0][1] > self.limit_s:
            index, at, events, task = self.waiting.popleft()
            if not events and not task.done():  # one that ended is counted by ``add``
                self.counter.overdue(index, (now - at) * 1000.0)
        return self.counter.lost_slo is not None


def level_records(
    sent: list[tuple[Prepared, float]], results: list[RequestRecord | BaseException], lost_slo: str | None
) -> list[RequestRecord]:
    """A level's records in send order; a request cancelled because the level was lost is recorded as such."""
    out: list[RequestRecord] = []
    for (req, t), res in zip(sent, results, strict=True):
        if isinstance(res, RequestRecord):
            out.append(res)
        elif isinstance(res, asyncio.CancelledError):
            detail = f"level abandoned: {lost_slo} already lost"
            out.append(RequestRecord(index=req.index, scheduled_at=t, sent_at=t, failure=ABANDONED, detail=detail))
        else:
            raise res
    return out
