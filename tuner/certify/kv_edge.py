"""A held rate whose edge is the KV cache is stated a step lower.

Above a KV-bound edge a server does not slow down gently: once the cache is full vLLM preempts a request and
computes it again later, the batch slows, more requests are in flight at once, and more are preempted. Below it,
whether a run tips depends on the draw: SmolLM2's defaults held 2.345 req/s in both 120-s soaks (their KV cache
peaking at 78 % and 84 %, no preemption) and then missed that rate for one of two `vllm bench serve` draws, whose
prompts were 3.4 % longer; a step below, 3 draws of 3 held (docs/certification.md). Two held soaks cannot bound a
miss chance that large. So where the lowest miss above the held rate ran out of KV cache, the certificate states
STEP x the held rate and says why; an edge that is not the KV cache keeps the held rate. Where the held soaks
themselves preempted, the step is not known to be enough (docs/certification.md, "Where the held soaks
preempted"): there the step is soaked on a fresh server, and stepped again while its soak preempts or misses, at
most EDGE_SOAKS times; a rate whose soak held without a preemption is stated, else a step below the last one soaked,
and the certificate says it was not soaked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.server_metrics import ServerSummary
from tuner.certify.confirming import STEP
from tuner.certify.edge import lowest_with_server
from tuner.certify.soak_record import Soak, stepping
from tuner.trial.level import Level

KV_FULL = 0.99  # a KV cache usage peak this high is a full cache (vLLM reports blocks in use, a fraction)
EDGE_SOAKS = 2  # soaks below a KV-bound edge whose held soaks preempted, each a step below the last


@dataclass(frozen=True)
class EdgeSoak:
    """A soak below a KV-bound edge: its rate, whether it held, and vLLM's preemptions over it."""

    rate_req_s: float
    holds: bool
    preemptions: int | None

    @property
    def clean(self) -> bool:
        """Held with no preemption: the KV cache never ran out at this rate."""
        return self.holds and not self.preemptions

    def phrase(self) -> str:
        """'59.595 req/s held with 17 preemptions'."""
        verdict = "held" if self.holds else "missed"
        pre = f"with {self.preemptions:,} preemptions" if self.preemptions else "without a preemption"
        return f"{self.rate_req_s:.3f} req/s {verdict} {pre}"

    def to_dict(self) -> dict[str, Any]:
        return {"rate_req_s": self.rate_req_s, "holds": self.holds, "preemptions": self.preemptions}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EdgeSoak:
        pre = d.get("preemptions")
        return cls(float(d["rate_req_s"]), bool(d["holds"]), int(pre) if pre is not None else None)


def ran_out_of_kv(server: ServerSummary) -> bool:
    """vLLM preempted a request, or its KV cache usage peaked full, during the run."""
    return bool(server.preemptions) or (server.kv_cache_usage_peak or 0.0) >= KV_FULL


@dataclass(frozen=True)
class KvEdge:
    """Why a certification states a step below the rate that held: the lowest miss above it ran out of KV cache."""

    held_req_s: float  # the highest rate the soaks held (tuner.certify.confirming.eligible_rates)
    miss_req_s: float  # the lowest rate seen to miss above it
    miss_source: str  # tuner.certify.edge.SOAK | LEVEL
    preemptions: int | None  # vLLM's preemptions over that miss
    kv_peak: float | None  # its KV cache usage peak (a fraction)
    held_preemptions: tuple[int, ...] = ()  # vLLM's preemptions in each soak that held the held rate, in soak order
    below: tuple[EdgeSoak, ...] = ()  # the soaks below the edge, in order (only where the held soaks preempted)

    @property
    def soaked(self) -> bool:
        """The stated rate was soaked below the edge and held there without a preemption."""
        return bool(self.below) and self.below[-1].clean

    @property
    def stated_req_s(self) -> float:
        """The last soak below the edge where it held clean, else a step below it (or below the held rate)."""
        if self.soaked:
            return self.below[-1].rate_req_s
        return STEP * (self.below[-1].rate_req_s if self.below else self.held_req_s)

    @property
    def kind(self) -> str:
        return "KV-bound edge"

    def phrase(self) -> str:
        """'stated a step below the 2.345 req/s that held: the lowest miss above it, at 2.606 req/s, ran out of KV
        cache (5 preemptions, KV cache 100 % full)'."""
        signs = [f"{self.preemptions} preemptions"] if self.preemptions else []
        if self.kv_peak is not None and self.kv_peak >= KV_FULL:
            signs.append(f"KV cache {self.kv_peak * 100:.0f} % full")
        how = "below" if self.below else "a step below"
        return (
            f"stated {how} the {self.held_req_s:.3f} req/s that held: the lowest miss above it, at "
            f"{self.miss_req_s:.3f} req/s, ran out of KV cache ({', '.join(signs)}){self._caveat()}"
        )

    @property
    def held_preempted(self) -> bool:
        """The soaks that held ran out of KV cache too: the held rate is at the edge, not below it."""
        return any(self.held_preemptions)

    def _caveat(self) -> str:
        if not self.held_preempted:
            return ""
        counts = " and ".join(f"{n:,}" for n in self.held_preemptions)
        if not self.below:
            return (
                f"; its held soaks preempted too ({counts} preemptions): another draw of prompts, or a longer run, "
                "may miss the stated rate, which was not soaked itself"
            )
        tried = ", then ".join(t.phrase() for t in self.below)
        if self.soaked:
            return f"; its held soaks preempted too ({counts} preemptions), so the rates below were soaked: {tried}"
        return (
            f"; its held soaks preempted too ({counts} preemptions), and so did the soaks below: {tried}; the stated "
            "rate, a step below the last, was not soaked itself"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "held_rate_req_s": self.held_req_s,
            "stated_rate_req_s": self.stated_req_s,
            "miss_rate_req_s": self.miss_req_s,
            "miss_source": self.miss_source,
            "preemptions": self.preemptions,
            "kv_cache_usage_peak": self.kv_peak,
            "held_preemptions": list(self.held_preemptions),
            "below": [t.to_dict() for t in self.below],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KvEdge:
        pre, peak = d.get("preemptions"), d.get("kv_cache_usage_peak")
        return cls(
            float(d["held_rate_req_s"]),
            float(d["miss_rate_req_s"]),
            str(d["miss_source"]),
            int(pre) if pre is not None else None,
            float(peak) if peak is not None else None,
            tuple(int(n) for n in d.get("held_preemptions") or ()),  # absent in files before 2026-12-06, evening
            tuple(EdgeSoak.from_dict(t) for t in d.get("below") or ()),  # absent in files before 2026-12-06, night
        )


def kv_edge(held_req_s: float | None, soaks: Sequence[Soak], levels: Iterable[Level]) -> KvEdge | None:
    """The KV-bound edge above ``held_req_s`` (None: nothing held, nothing above missed, or the lowest miss above
    kept its KV cache): the certification's own soaks and the configuration's search levels alike."""
    if held_req_s is None:
        return None
    steps = stepping(soaks)
    lowest = lowest_with_server(held_req_s, steps, levels)
    if lowest is None or not ran_out_of_kv(lowest[1]):
        return None
    miss, server = lowest
    held = tuple(s.report.server.preemptions or 0 for s in steps if s.holds and s.rate == held_req_s)
    below = tuple(EdgeSoak(s.rate, s.holds, s.report.server.preemptions) for s in soaks if s.edge)
    return KvEdge(held_req_s, miss.rate_req_s, miss.source, server.preemptions, server.kv_cache_usage_peak, held, below)


def next_edge_rate(edge: KvEdge | None, floor: float) -> float | None:
    """The next soak below a KV-bound edge whose held soaks preempted: a step below the held rate, or below the last
    soak there where it preempted or missed; the floor itself, once, where a step would pass it. None: no such edge,
    the last soak below it held clean, or EDGE_SOAKS were run."""
    if edge is None or not edge.held_preempted or edge.soaked or len(edge.below) >= EDGE_SOAKS:
        return None
    base = edge.below[-1].rate_req_s if edge.below else edge.held_req_s
    if STEP * base >= floor:
        return STEP * base
    return floor if floor < base and all(t.rate_req_s != floor for t in edge.below) else None
