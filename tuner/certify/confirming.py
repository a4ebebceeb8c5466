"""The soaks' rules (tuner.certify.certification): which rate next, which held soak certifies, on how many servers.

A certified rate must hold on ``SERVERS`` fresh servers: on the 2-core CPU one configuration's fresh servers
differ by more than the step between a held and a missed soak, and a rate held once at the edge missed on the
next two servers (docs/certification.md). A soak that misses disqualifies its rate and every rate above it,
unless the same server then held that rate (the retry after a shared host: ``soak_again``). Soaks below a KV-bound
edge (``Soak.edge``, tuner.certify.kv_edge) are not stepping: these rules leave them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tuner.certify.soak_record import stepping

if TYPE_CHECKING:
    from tuner.certify.certification import Soak

STEP = 0.9  # each step down keeps this share of the rate
MAX_SOAKS = 5  # soaks stepping down and bisecting; confirmations may add SERVERS - 1 more
SERVERS = 2  # fresh servers a certified rate must hold on
RECONFIRMS = 1  # after a confirmation missed, this many more soaks may confirm the rate below it


def uncleared_misses(soaks: Sequence[Soak]) -> list[float]:
    """The rates of missed soaks that no later soak on the same server held at the same rate."""
    soaks = stepping(soaks)
    return [
        s.rate
        for i, s in enumerate(soaks)
        if not s.holds and not any(t.holds and t.rate == s.rate and t.server == s.server for t in soaks[i + 1 :])
    ]


def eligible_rates(soaks: Sequence[Soak]) -> list[float]:
    """Held rates below every uncleared miss: the rates a certificate may state."""
    misses = uncleared_misses(soaks)
    return [s.rate for s in stepping(soaks) if s.holds and all(m > s.rate for m in misses)]


def servers_holding(soaks: Sequence[Soak], rate: float) -> int:
    """How many servers held a soak at ``rate`` or above (one that holds more holds less)."""
    soaks = stepping(soaks)
    return len({s.server for s in soaks if s.holds and s.rate >= rate})


def missed_confirmations(soaks: Sequence[Soak]) -> int:
    """Misses at a rate that another server had already held: confirmations that failed."""
    soaks = stepping(soaks)
    return sum(
        1
        for i, s in enumerate(soaks)
        if not s.holds and any(t.holds and t.rate == s.rate and t.server != s.server for t in soaks[:i])
    )


def soak_bound(soaks: Sequence[Soak]) -> int:
    """The most soaks a certification takes: MAX_SOAKS stepping, SERVERS − 1 confirming, and RECONFIRMS more
    once a confirmation missed, so that the rate below the miss can still rest on SERVERS servers."""
    return MAX_SOAKS + SERVERS - 1 + min(missed_confirmations(soaks), RECONFIRMS)


def soak_again(soaks: Sequence[Soak]) -> bool:
    """A soak that missed while other processes took a notable share of the host's cores is held once more at
    the same rate on the same server: a figure stepped down for someone else's work would not be the
    configuration's."""
    last = soaks[-1]
    shared = last.host is not None and last.host.notable
    first_at_rate = not any(s.rate == last.rate and s.server == last.server for s in soaks[:-1])
    return not last.edge and not last.holds and shared and first_at_rate and len(soaks) < MAX_SOAKS


def next_step(soaks: Sequence[Soak], floor: float) -> tuple[float | None, bool]:
    """The next soak's rate (None: done) and whether it needs a fresh server: after a miss; and once stepping is
    done, to confirm the certified rate on another fresh server until SERVERS held it (within soak_bound)."""
    rate = next_rate(soaks, floor)
    if rate is not None:
        return rate, not soaks[-1].holds
    held = max(eligible_rates(soaks), default=None)
    if held is None or servers_holding(soaks, held) >= SERVERS or len(soaks) >= soak_bound(soaks):
        return None, False
    return held, True


def next_rate(soaks: Sequence[Soak], floor: float) -> float | None:
    """The next soak's rate, or None when certification is done (MAX_SOAKS, the floor, or a held rate within
    a step of the lowest missed one). Before any soak held: STEP below the last rate, or below what the
    server kept up with while arrivals lasted when that is lower (older soaks: their throughput), and the floor
    where that step would pass it. After: the midpoint of the highest held and lowest missed rates."""
    if len(soaks) >= MAX_SOAKS:
        return None
    held = eligible_rates(soaks)
    if not held:
        last = soaks[-1]
        sustained = last.sustained_req_s or last.throughput_req_s or last.rate
        rate = STEP * min(last.rate, sustained)
        if rate >= floor:
            return rate
        return floor if floor < last.rate else None  # a step past the floor soaks the floor itself, once
    lo = max(held)
    hi = min((s.rate for s in soaks if not s.holds and s.rate > lo), default=None)
    if hi is None or lo >= STEP * hi:
        return None
    return (lo + hi) / 2
