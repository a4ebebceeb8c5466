"""What one simulated load level gives: each request as the client saw it, and the metrics ``loadtest``
computes from such records (same definitions, same percentile: ``loadtest.metrics``, ``loadtest.report``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from loadtest.dist import percentile
from loadtest.slo import SLO


@dataclass(frozen=True)
class Served:
    """One request, client side, seconds on the simulation's clock; ``first``/``end`` None: it failed
    (rejected as too long, or cancelled with its level)."""

    sent_s: float
    first_s: float | None
    end_s: float | None
    output_tokens: int

    @property
    def ok(self) -> bool:
        return self.end_s is not None

    def latency_ms(self, metric: str) -> float | None:
        if self.first_s is None or self.end_s is None:
            return None
        if metric == "ttft":
            return (self.first_s - self.sent_s) * 1e3
        if metric == "e2e":
            return (self.end_s - self.sent_s) * 1e3
        if metric == "tpot":
            return (self.end_s - self.first_s) * 1e3 / (self.output_tokens - 1) if self.output_tokens > 1 else None
        raise ValueError(f"the model predicts ttft, tpot and e2e, not {metric!r}")


@dataclass(frozen=True)
class LevelOutcome:
    served: tuple[Served, ...]
    rate: float | None = None
    concurrency: int | None = None
    abandoned: bool = False  # stopped once its SLO was certainly lost (as the tuner's levels do)
    preemptions: int = 0
    prefix_hit_rate: float | None = None  # None without prefix caching
    running_peak: int = 0  # the most sequences one step ran
    kv_usage_peak: float = 0.0  # the most KV blocks in use at once, a fraction of the usable ones
    # as vLLM's /metrics time them at the engine, before the front end streams the tokens: the mean time between
    # two tokens of a request (token-weighted step duration), and from a request reaching the engine to its first
    engine_itl_ms: float | None = None
    engine_ttft_ms: float | None = None

    def samples(self, metric: str) -> list[float]:
        return sorted(v for s in self.served if (v := s.latency_ms(metric)) is not None)

    def value(self, metric: str, pct: float) -> float | None:
        """A percentile over the successful requests (``LoadReport.value``)."""
        return percentile(self.samples(metric), pct)

    def slo_value(self, slo: SLO) -> float | None:
        """The SLO's percentile with failed requests counted as misses (``LoadReport.slo_values``)."""
        failed = sum(1 for s in self.served if not s.ok)
        v = percentile(self.samples(slo.metric) + [math.inf] * failed, slo.percentile)
        return None if v is None or math.isinf(v) else v

    def slo_met(self, slos: tuple[SLO, ...]) -> bool:
        return all(slo.met_by(self.slo_value(slo)) for slo in slos)

    @property
    def duration_s(self) -> float:
        ends = [s.end_s if s.end_s is not None else s.sent_s for s in self.served]
        return max(ends) - min(s.sent_s for s in self.served) if self.served else 0.0

    @property
    def throughput_req_s(self) -> float:
        return sum(1 for s in self.served if s.ok) / max(self.duration_s, 1e-9)

    def goodput_req_s(self, slos: tuple[SLO, ...]) -> float:
        good = sum(1 for s in self.served if s.ok and all(_meets(s, slo) for slo in slos))
        return good / max(self.duration_s, 1e-9)


def _meets(s: Served, slo: SLO) -> bool:
    v = s.latency_ms(slo.metric)
    return v is None or v <= slo.limit_ms
