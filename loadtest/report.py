"""The result of one load test: a frozen :class:`LoadReport`, its JSON form and its summary table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from loadtest.host_cpu import HostCpu
from loadtest.server_metrics import GaugeSample
from loadtest.slo import SLO
from loadtest.steady import Steadiness

PERCENTILES = (50.0, 90.0, 95.0, 99.0)
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2e")


LATE_GENERATOR_MS = 50.0  # the text report says so when the generator's own p95 lateness reaches this


def percentile_position(n: int, pct: float) -> float:
    """Where the pct-th percentile of n sorted values sits (0 … n−1), linear interpolation's rank."""
    return (n - 1) * min(max(pct, 0.0), 100.0) / 100.0


def percentile(sorted_values: tuple[float, ...] | list[float], pct: float) -> float | None:
    """Linear-interpolated percentile (numpy's default) of already sorted values; None when empty.

    ``inf`` values are allowed (failed requests in SLO checks): a result touching one is ``inf``.
    """
    n = len(sorted_values)
    if n == 0:
        return None
    pos = percentile_position(n, pct)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    a, b = sorted_values[lo], sorted_values[hi]
    frac = pos - lo
    if frac == 0.0:
        return a
    if math.isinf(a) or math.isinf(b):
        return math.inf
    return a + (b - a) * frac


@dataclass(frozen=True)
class Dist:
    """Summary of one latency, in milliseconds. All None when nothing was measured."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None

    @classmethod
    def of(cls, sorted_ms: tuple[float, ...]) -> Dist:
        if not sorted_ms:
            return cls()
        ps = [percentile(sorted_ms, p) for p in PERCENTILES]
        return cls(math.fsum(sorted_ms) / len(sorted_ms), *ps)

    def to_dict(self) -> dict[str, float | None]:
        return {"mean": self.mean, "p50": self.p50, "p90": self.p90, "p95": self.p95, "p99": self.p99}


@dataclass(frozen=True)
class LoadReport:
    """What one load test measured. Latencies in ms over the successful, non-warmup requests.

    ``slo_values`` are computed with every failed request counted as a miss (an infinite latency),
    so failures can never make an SLO look met; a value that lands on a failure is None.
    """

    requests_ok: int
    requests_failed: int
    failures: dict[str, int]
    output_tokens: int
    input_tokens: int
    duration_s: float
    throughput_req_s: float
    throughput_tok_s: float
    goodput_req_s: float
    requests_good: int
    ttft_ms: Dist
    tpot_ms: Dist
    itl_ms: Dist
    e2e_ms: Dist
    schedule_lag_ms: Dist
    server: dict[str, Any]
    slos: tuple[SLO, ...]
    slo_met: bool | None
    slo_values: dict[str, float | None]
    token_counts_exact: bool
    samples: dict[str, tuple[float, ...]] = field(default_factory=dict, repr=False, compare=False)
    records: tuple[Any, ...] = field(default=(), repr=False, compare=False)  # the raw RequestRecords
    gauges: tuple[GaugeSample, ...] = field(default=(), repr=False, compare=False)  # vLLM's, polled during the run
    steady: Steadiness | None = None  # loadtest.steady: the level's steady-state checks (None: too few requests)
    host: HostCpu | None = None  # loadtest.host_cpu: how busy the host was over the run (None: not measured)

    @property
    def holds(self) -> bool:
        """Every SLO met over the whole run and the run in steady state (the capacity search's verdict)."""
        return bool(self.slo_met) and (self.steady is None or self.steady.holds)

    def value(self, metric: str, pct: float) -> float | None:
        """Any percentile (e.g. 99.9) of ``ttft``/``tpot``/``itl``/``e2e``/``schedule_lag``, in ms."""
        if metric not in self.samples:
            raise ValueError(f"unknown metric {metric!r}; use one of: {', '.join(sorted(self.samples))}")
        return percentile(self.samples[metric], pct)

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
            "server": dict(self.server),
            "slos": [str(s) for s in self.slos],
            "slo_met": self.slo_met,
            "slo_values": dict(self.slo_values),
            "token_counts_exact": self.token_counts_exact,
            "steady": self.steady.to_dict() if self.steady is not None else None,
            "host_cpu": self.host.to_dict() if self.host is not None else None,
        }


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"


def format_table(r: LoadReport) -> str:
    """A readable summary for the terminal."""
    lines = [
        f"requests      {r.requests_ok} ok, {r.requests_failed} failed"
        + (f" ({', '.join(f'{k}: {v}' for k, v in sorted(r.failures.items()))})" if r.failures else ""),
        f"duration      {r.duration_s:,.2f} s",
        f"throughput    {r.throughput_req_s:,.2f} req/s, {r.throughput_tok_s:,.1f} output tok/s "
        f"({r.output_tokens:,} output, {r.input_tokens:,} input tokens)",
    ]
    if r.slos:
        lines.append(f"goodput       {r.goodput_req_s:,.2f} req/s ({r.requests_good} requests met every SLO)")
    lines.append("")
    lines.append(f"{'latency (ms)':<14}{'mean':>10}{'p50':>10}{'p90':>10}{'p95':>10}{'p99':>10}")
    for name, d in (
        ("TTFT", r.ttft_ms),
        ("TPOT", r.tpot_ms),
        ("ITL", r.itl_ms),
        ("E2E", r.e2e_ms),
        ("schedule lag", r.schedule_lag_ms),
    ):
        lines.append(f"{name:<14}" + "".join(f"{_ms(v):>10}" for v in (d.mean, d.p50, d.p90, d.p95, d.p99)))
    lag = r.schedule_lag_ms.p95
    if lag is not None and lag >= LATE_GENERATOR_MS:
        lines.append(
            f"(the load generator itself fell behind its schedule: p95 {lag:,.0f} ms, counted in TTFT and "
            "E2E; on a machine shared with the server, give the server a lower priority, e.g. `nice -n 10`)"
        )
    if r.host is not None:
        lines.append(
            f"host CPU      {r.host.busy:.2f} of {r.host.cores} cores busy: this load generator (and any server it "
            f"started) {r.host.tree:.2f}, other processes {r.host.others:.2f}"
        )
    if not r.token_counts_exact and r.requests_ok:
        lines.append("(the server gave no per-chunk usage: ITL split evenly over chunks; TPOT is exact)")
    if r.slos:
        lines.append("")
        for s in r.slos:
            v = r.slo_values.get(s.key)
            lines.append(f"SLO {str(s):<22} measured {_ms(v):>10} ms  {'met' if s.met_by(v) else 'MISSED'}")
        lines.append(f"SLOs {'met' if r.slo_met else 'NOT met'}")
    if r.server:
        lines.append("")
        lines.append(
            "server (vLLM /metrics): "
            + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(r.server.items()))
        )
    return "\n".join(lines)
