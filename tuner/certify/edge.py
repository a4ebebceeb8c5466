"""How near the stated capacity a measurement failed: the lowest rate seen to miss above it.

A certified rate is a lower bound: it held. The SRE signing it also wants to know how much load lies between it and
the first rate that did not hold, and how that miss was measured: a soak on a fresh server, or a search level
(shorter, on the trial's server). Both come from the study's own measurements of the winning configuration; the
edge itself lies between the two, on that hardware and with slotune's client (another client, or another server of
the same configuration, may hold more: docs/certification.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.server_metrics import ServerSummary
from tuner.certify.confirming import uncleared_misses
from tuner.certify.soak_record import Soak
from tuner.trial.level import Level

SOAK, LEVEL = "soak", "search level"


@dataclass(frozen=True)
class MissAbove:
    """The lowest rate above the stated capacity at which a soak or a search level of the configuration missed."""

    rate_req_s: float
    seconds: float | None  # how long that soak or level ran (None: not recorded)
    source: str  # SOAK | LEVEL

    def phrase(self, stated_req_s: float) -> str:
        """'the lowest rate seen to miss: 32.440 req/s (+5.5 %), a 72-s search level'."""
        span = f"{self.seconds:.0f}-s " if self.seconds is not None else ""
        what = f"a {span}soak on a fresh server" if self.source == SOAK else f"a {span}search level"
        above = (self.rate_req_s / stated_req_s - 1) * 100
        return f"the lowest rate seen to miss: {self.rate_req_s:.3f} req/s ({above:+.1f} %), {what}"

    def to_dict(self) -> dict[str, Any]:
        return {"rate_req_s": self.rate_req_s, "seconds": self.seconds, "source": self.source}


def misses_above(
    stated_req_s: float, soaks: Sequence[Soak], levels: Iterable[Level]
) -> list[tuple[MissAbove, ServerSummary]]:
    """Every miss above ``stated_req_s``, with vLLM's figures over it: ``soaks`` that no retry on the same server
    cleared, and the rate ``levels`` that did not pass."""
    missed = set(uncleared_misses(soaks))  # a rate held on one server may miss on another: the miss is told
    found = [
        (MissAbove(s.rate, s.seconds, SOAK), s.report.server)
        for s in soaks
        if not s.holds and s.rate in missed and s.rate > stated_req_s
    ]
    found += [
        (MissAbove(lv.rate, lv.duration_s, LEVEL), lv.server)
        for lv in levels
        if lv.kind == "rate" and lv.rate is not None and not lv.passed and lv.rate > stated_req_s
    ]
    return found


def lowest_with_server(
    stated_req_s: float, soaks: Sequence[Soak], levels: Iterable[Level]
) -> tuple[MissAbove, ServerSummary] | None:
    """The lowest miss above ``stated_req_s`` and vLLM's figures over it; a soak wins a tie (the longer
    measurement). None: nothing above missed."""
    found = misses_above(stated_req_s, soaks, levels)
    return min(found, key=lambda m: (m[0].rate_req_s, m[0].source != SOAK), default=None)


def lowest_miss_above(stated_req_s: float, soaks: Sequence[Soak], levels: Iterable[Level]) -> MissAbove | None:
    """The lowest miss above ``stated_req_s`` among ``soaks`` (those no retry on the same server cleared) and the
    rate ``levels`` that did not pass; a soak wins a tie (the longer measurement). None: nothing above missed."""
    lowest = lowest_with_server(stated_req_s, soaks, levels)
    return lowest[0] if lowest is not None else None
