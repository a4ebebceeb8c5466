"""A held rate whose soaks left too little room under an SLO's limit is stated a step lower.

Near a compute-bound edge a server's p95 at one rate moves from one fresh server (and hour) to the next by more than
one soak's bootstrap interval shows: on the 2-core CPU host SmolLM2 held 0.833 req/s in two soaks (p95 TTFT 1,223
and 1,728 ms against 2 s) and then held it for 5 of 9 `vllm bench serve` draws over a day (p95 1,096-2,056 ms); a
step below, 3 of 3 held (docs/certification.md). Two held soaks say how far two servers differed; where the worst
of them plus that difference passes the limit, or any held soak's 90 % interval reaches past it, the next server
may miss. The certificate then states STEP x the held rate and says why, as at a KV-bound edge (kv_edge).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.slo import SLO
from tuner.certify.confirming import STEP
from tuner.certify.kv_edge import KvEdge
from tuner.certify.soak_record import Soak


@dataclass(frozen=True)
class ThinMargin:
    """Why a certification states a step below the rate that held: its soaks came too near one SLO's limit."""

    held_req_s: float  # the highest rate the soaks held (tuner.certify.confirming.eligible_rates)
    slo: str  # the SLO's key, e.g. ttft_p95
    limit_ms: float
    values_ms: tuple[float, ...]  # that SLO's value in each soak that held the held rate, in soak order
    interval_high_ms: float | None  # the highest upper end of their 90 % intervals (None: none stored)

    @property
    def stated_req_s(self) -> float:
        return STEP * self.held_req_s

    @property
    def kind(self) -> str:
        return f"thin margin on {self.slo}"

    @property
    def spread_ms(self) -> float:
        return max(self.values_ms) - min(self.values_ms)

    @property
    def room_ms(self) -> float:
        """What the worst soak left under the limit."""
        return self.limit_ms - max(self.values_ms)

    def phrase(self) -> str:
        """'stated a step below the 0.833 req/s that held: its soaks' ttft_p95 (1,223 and 1,728 ms) differ by
        505 ms, more than the 272 ms the worse left under the 2,000-ms limit'."""
        head = f"stated a step below the {self.held_req_s:.3f} req/s that held: "
        if len(self.values_ms) > 1 and self.spread_ms > self.room_ms:
            vals = " and ".join(f"{v:,.0f}" for v in self.values_ms)
            return (
                head + f"its soaks' {self.slo} ({vals} ms) differ by {self.spread_ms:,.0f} ms, more than the "
                f"{self.room_ms:,.0f} ms the worse left under the {self.limit_ms:,.0f}-ms limit"
            )
        return (
            head + f"its soak's {self.slo} of {max(self.values_ms):,.0f} ms has a 90 % interval reaching "
            f"{self.interval_high_ms or 0:,.0f} ms, past the {self.limit_ms:,.0f}-ms limit"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "held_rate_req_s": self.held_req_s,
            "stated_rate_req_s": self.stated_req_s,
            "slo": self.slo,
            "limit_ms": self.limit_ms,
            "values_ms": list(self.values_ms),
            "interval_high_ms": self.interval_high_ms,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ThinMargin:
        high = d.get("interval_high_ms")
        values = tuple(float(v) for v in d["values_ms"])
        return cls(float(d["held_rate_req_s"]), d["slo"], float(d["limit_ms"]), values, high)


Step = KvEdge | ThinMargin  # why a certificate states a step below the rate its soaks held


def stated_step(kv: KvEdge | None, thin: ThinMargin | None) -> Step | None:
    """The one step a certificate takes: a KV-bound edge first, else a thin margin (None: the held rate is stated)."""
    return kv if kv is not None else thin


def thin_margin(held_req_s: float | None, soaks: Sequence[Soak], slos: Iterable[SLO]) -> ThinMargin | None:
    """The SLO whose held soaks left the least room, where that room is too little (None: nothing held, or every
    SLO kept its room): the worst value plus the soaks' spread, or an interval's upper end, past the limit."""
    if held_req_s is None:
        return None
    held = [s for s in soaks if s.holds and s.rate == held_req_s]
    thin = [m for slo in slos if (m := _margin(held_req_s, held, slo)) is not None]
    return min(thin, key=lambda m: m.room_ms / m.limit_ms, default=None)


def _margin(held_req_s: float, held: Sequence[Soak], slo: SLO) -> ThinMargin | None:
    values = tuple(v for s in held if (v := s.slo_values.get(slo.key)) is not None)
    if not values:
        return None
    highs = [iv.high for s in held if (iv := s.intervals.get(slo.key)) is not None]
    high = max(highs, default=None)
    spread = max(values) - min(values)
    if max(values) + spread <= slo.limit_ms and (high is None or high <= slo.limit_ms):
        return None
    return ThinMargin(held_req_s, slo.key, slo.limit_ms, values, high)
