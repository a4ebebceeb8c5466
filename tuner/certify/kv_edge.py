"""A held rate whose edge is the KV cache is stated a step lower.

Above a KV-bound edge a server does not slow down gently: once the cache is full vLLM preempts a request and
computes it again later, the batch slows, more requests are in flight at once, and more are preempted. Below it,
whether a run tips depends on the draw: SmolLM2's defaults held 2.345 req/s in both 120-s soaks (their KV cache
peaking at 78 % and 84 %, no preemption) and then missed that rate for one of two `vllm bench serve` draws, whose
prompts were 3.4 % longer; a step below, 3 draws of 3 held (docs/certification.md). Two held soaks cannot bound a
miss chance that large. So where the lowest miss above the held rate ran out of KV cache, the certificate states
STEP x the held rate and says why; an edge that is not the KV cache keeps the held rate. Where the held soaks
themselves preempted, the step is not known to be enough (docs/certification.md, "Where the held soaks
preempted"), and the certificate says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.server_metrics import ServerSummary
from tuner.certify.confirming import STEP
from tuner.certify.edge import lowest_with_server
from tuner.certify.soak_record import Soak
from tuner.trial.level import Level

KV_FULL = 0.99  # a KV cache usage peak this high is a full cache (vLLM reports blocks in use, a fraction)


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

    @property
    def stated_req_s(self) -> float:
        return STEP * self.held_req_s

    @property
    def kind(self) -> str:
        return "KV-bound edge"

    def phrase(self) -> str:
        """'stated a step below the 2.345 req/s that held: the lowest miss above it, at 2.606 req/s, ran out of KV
        cache (5 preemptions, KV cache 100 % full)'."""
        signs = [f"{self.preemptions} preemptions"] if self.preemptions else []
        if self.kv_peak is not None and self.kv_peak >= KV_FULL:
            signs.append(f"KV cache {self.kv_peak * 100:.0f} % full")
        return (
            f"stated a step below the {self.held_req_s:.3f} req/s that held: the lowest miss above it, at "
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
        return (
            f"; its held soaks preempted too ({counts} preemptions): another draw of prompts, or a longer run, "
            "may miss the stated rate, which was not soaked itself"
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
        )


def kv_edge(held_req_s: float | None, soaks: Sequence[Soak], levels: Iterable[Level]) -> KvEdge | None:
    """The KV-bound edge above ``held_req_s`` (None: nothing held, nothing above missed, or the lowest miss above
    kept its KV cache): the certification's own soaks and the configuration's search levels alike."""
    if held_req_s is None:
        return None
    lowest = lowest_with_server(held_req_s, soaks, levels)
    if lowest is None or not ran_out_of_kv(lowest[1]):
        return None
    miss, server = lowest
    held = tuple(s.report.server.preemptions or 0 for s in soaks if s.holds and s.rate == held_req_s)
    return KvEdge(held_req_s, miss.rate_req_s, miss.source, server.preemptions, server.kv_cache_usage_peak, held)
