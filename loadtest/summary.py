"""ReportSummary: what one load test measured, as it is stored and read back (a trial's best level, a soak).

:class:`loadtest.report.LoadReport` less its raw samples and records; ``to_dict`` is the report's JSON
(``LoadReport.to_dict`` writes it through this record) and ``from_dict`` reads it, also as older versions
stored it: a key they did not write takes the field's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loadtest.dist import Dist
from loadtest.host_cpu import HostCpu
from loadtest.server_metrics import ServerSummary
from loadtest.slo import SLO, parse_slos
from loadtest.steady import Steadiness


@dataclass(frozen=True)
class ReportSummary:
    """Latencies in ms over the successful, non-warmup requests; ``slo_values`` count failures as misses."""

    requests_ok: int = 0
    requests_failed: int = 0
    failures: dict[str, int] = field(default_factory=dict)  # failed requests by reason
    output_tokens: int = 0
    input_tokens: int = 0
    duration_s: float = 0.0
    throughput_req_s: float = 0.0
    throughput_tok_s: float = 0.0
    goodput_req_s: float = 0.0
    requests_good: int = 0  # requests that met every SLO
    ttft_ms: Dist = Dist()
    tpot_ms: Dist = Dist()
    itl_ms: Dist = Dist()
    e2e_ms: Dist = Dist()
    schedule_lag_ms: Dist = Dist()  # the load generator's own lateness (counted in TTFT)
    server: ServerSummary = ServerSummary()  # vLLM's /metrics over the run
    slos: tuple[SLO, ...] = ()
    slo_met: bool | None = None  # None: no SLO given
    slo_values: dict[str, float | None] = field(default_factory=dict)
    token_counts_exact: bool = True
    steady: Steadiness | None = None  # None: too few requests, or stored before steadiness was judged
    host_cpu: HostCpu | None = None  # None: not measured
    # requests sent per second over the sending span, (n - 1) / (last scheduled send - first): an open-loop run's
    # realized arrival rate, which a Poisson schedule sets a few % off its nominal rate (None: fewer than 2 sent)
    sent_rate_req_s: float | None = None

    @property
    def good_share(self) -> float:
        """Share of the requests (failed ones included) that met every SLO."""
        total = self.requests_ok + self.requests_failed
        return self.requests_good / total if total else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict with the keys promised in DESIGN.md (plus a few more)."""
        return {
            "requests_ok": self.requests_ok,
            "requests_failed": self.requests_failed,
            "failures": dict(self.failures),
            "output_tokens": self.output_tokens,
            "input_tokens": self.input_tokens,
            "duration_s": self.duration_s,
            "throughput_req_s": self.throughput_req_s,
            "throughput_tok_s": self.throughput_tok_s,
            "goodput_req_s": self.goodput_req_s,
            "requests_good": self.requests_good,
            "ttft_ms": self.ttft_ms.to_dict(),
            "tpot_ms": self.tpot_ms.to_dict(),
            "itl_ms": self.itl_ms.to_dict(),
            "e2e_ms": self.e2e_ms.to_dict(),
            "schedule_lag_ms": self.schedule_lag_ms.to_dict(),
            "server": self.server.to_dict(),
            "slos": [str(s) for s in self.slos],
            "slo_met": self.slo_met,
            "slo_values": dict(self.slo_values),
            "token_counts_exact": self.token_counts_exact,
            "steady": self.steady.to_dict() if self.steady is not None else None,
            "host_cpu": self.host_cpu.to_dict() if self.host_cpu is not None else None,
            "sent_rate_req_s": self.sent_rate_req_s,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReportSummary:
        steady, host = d.get("steady"), d.get("host_cpu")
        return cls(
            requests_ok=d.get("requests_ok", 0),
            requests_failed=d.get("requests_failed", 0),
            failures=dict(d.get("failures") or {}),
            output_tokens=d.get("output_tokens", 0),
            input_tokens=d.get("input_tokens", 0),
            duration_s=d.get("duration_s", 0.0),
            throughput_req_s=d.get("throughput_req_s", 0.0),
            throughput_tok_s=d.get("throughput_tok_s", 0.0),
            goodput_req_s=d.get("goodput_req_s", 0.0),
            requests_good=d.get("requests_good", 0),
            ttft_ms=Dist.from_dict(d.get("ttft_ms")),
            tpot_ms=Dist.from_dict(d.get("tpot_ms")),
            itl_ms=Dist.from_dict(d.get("itl_ms")),
            e2e_ms=Dist.from_dict(d.get("e2e_ms")),
            schedule_lag_ms=Dist.from_dict(d.get("schedule_lag_ms")),
            server=ServerSummary.from_dict(d.get("server")),
            slos=tuple(s for text in d.get("slos") or () for s in parse_slos(text)),
            slo_met=d.get("slo_met"),
            slo_values=dict(d.get("slo_values") or {}),
            token_counts_exact=d.get("token_counts_exact", True),
            steady=Steadiness.from_dict(steady) if steady else None,
            host_cpu=HostCpu.from_dict(host) if host else None,
            sent_rate_req_s=d.get("sent_rate_req_s"),
        )
