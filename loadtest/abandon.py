"""Abandon a load level as soon as its SLO is certainly lost (the tuner's capacity search uses this to
spend no time finishing a level it already knows is over capacity).

An ``xxx_pNN`` SLO over N planned requests allows at most ⌊(1 − NN/100)·N⌋ requests above the limit
(failed requests count as misses). Once more have missed, no later request can bring pNN back under
the limit, so the level is lost. Only ttft/tpot/e2e are judged per request here (ITL SLOs never
abandon a level: its percentile is over tokens, not requests).
"""

from __future__ import annotations

import math

from loadtest.metrics import _meets, timings
from loadtest.records import RequestRecord
from loadtest.slo import SLO


class MissCounter:
    """Feed completed records with ``add``; it returns True once some SLO can no longer be met."""

    def __init__(self, slos: tuple[SLO, ...], planned: int) -> None:
        self.slos = tuple(s for s in slos if s.metric in ("ttft", "tpot", "e2e"))
        self.allowed = {s.key: math.floor((1 - s.percentile / 100) * planned + 1e-9) for s in self.slos}
        self.misses = dict.fromkeys(self.allowed, 0)
        self.lost_slo: str | None = None

    def add(self, rec: RequestRecord) -> bool:
        if rec.warmup or not self.slos:
            return self.lost_slo is not None
        t = timings(rec) if rec.ok and rec.chunks else None
        for slo in self.slos:
            if t is None or not _meets(t, slo):
                self.misses[slo.key] += 1
                if self.misses[slo.key] > self.allowed[slo.key] and self.lost_slo is None:
                    self.lost_slo = slo.key
        return self.lost_slo is not None
