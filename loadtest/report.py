"""The result of one load test: a frozen :class:`LoadReport`, its stored form (loadtest.summary) and its summary
table. Percentiles and ``Dist`` live in loadtest.dist (also importable from here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from loadtest.dist import Dist, percentile
from loadtest.host_cpu import HostCpu
from loadtest.records import RequestRecord
from loadtest.server_metrics import GaugeSample, ServerSummary
from loadtest.slo import SLO
from loadtest.steady import Steadiness
from loadtest.summary import ReportSummary

LATENCY_METRICS = ("ttft", "tpot", "itl", "e2e")


LATE_GENERATOR_MS = 50.0  # the text report says so when the generator's own p95 lateness reaches this


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
    server: dict[str, float]  # vLLM's /metrics over the run (loadtest.server_metrics.summarize)
    slos: tuple[SLO, ...]
    slo_met: bool | None
    slo_values: dict[str, float | None]
    token_counts_exact: bool
    samples: dict[str, tuple[float, ...]] = field(default_factory=dict, repr=False, compare=False)
    records: tuple[RequestRecord, ...] = field(default=(), repr=False, compare=False)
    gauges: tuple[GaugeSample, ...] = field(default=(), repr=False, compare=False)  # vLLM's, polled during the run
    steady: Steadiness | None = None  # loadtest.steady: the level's steady-state checks (None: too few requests)
    host: HostCpu | None = None  # loadtest.host_cpu: how busy the host was over the run (None: not measured)
    sent_rate_req_s: float | None = None  # loadtest.summary.ReportSummary's: the realized rate of sending

    @property
    def holds(self) -> bool:
        """Every SLO met over the whole run and the run in steady state (the capacity search's verdict)."""
        return bool(self.slo_met) and (self.steady is None or self.steady.holds)

    def value(self, metric: str, pct: float) -> float | None:
        """Any percentile (e.g. 99.9) of ``ttft``/``tpot``/``itl``/``e2e``/``schedule_lag``, in ms."""
        if metric not in self.samples:
            raise ValueError(f"unknown metric {metric!r}; use one of: {', '.join(sorted(self.samples))}")
        return percentile(self.samples[metric], pct)

    def summary(self) -> ReportSummary:
        """What is stored of this report: all but its raw samples, records and gauges."""
        return ReportSummary(
            requests_ok=self.requests_ok,
            requests_failed=self.requests_failed,
            failures=dict(self.failures),
            output_tokens=self.output_tokens,
            input_tokens=self.input_tokens,
            duration_s=self.duration_s,
            throughput_req_s=self.throughput_req_s,
            throughput_tok_s=self.throughput_tok_s,
            goodput_req_s=self.goodput_req_s,
            requests_good=self.requests_good,
            ttft_ms=self.ttft_ms,
            tpot_ms=self.tpot_ms,
            itl_ms=self.itl_ms,
            e2e_ms=self.e2e_ms,
            schedule_lag_ms=self.schedule_lag_ms,
            server=ServerSummary.from_dict(self.server),
            slos=self.slos,
            slo_met=self.slo_met,
            slo_values=dict(self.slo_values),
            token_counts_exact=self.token_counts_exact,
            steady=self.steady,
            host_cpu=self.host,
            sent_rate_req_s=self.sent_rate_req_s,
        )

    def to_dict(self) -> dict[str, object]:
        """JSON-able dict with the keys promised in DESIGN.md (plus a few more): the summary's."""
        return self.summary().to_dict()


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"


def format_table(r: LoadReport) -> str:
    """A readable summary for the terminal."""
    lines = [
        f"requests      {r.requests_ok} ok, {r.requests_failed} failed"
        + (f" ({', '.join(f'{k}: {v}' for k, v in sorted(r.failures.items()))})" if r.failures else ""),
        f"duration      {r.duration_s:,.2f} s"
        + (f" (sent at {r.sent_rate_req_s:,.2f} req/s)" if r.sent_rate_req_s is not None else ""),
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


CACHED_BEYOND_SHARED = 0.25  # prompt tokens from the prefix cache beyond the workload's shared prefix: a repeat


def cached_prompts_note(r: LoadReport, shared_prefix_fraction: float, seed: int) -> str | None:
    """A warning when the server answered far more prompt tokens from its prefix cache than the workload's shared
    prefix explains (:func:`cached_prompts_warning` on the run's hit rate). None when the cache did not flatter it."""
    return cached_prompts_warning(r.server.get("prefix_cache_hit_rate"), shared_prefix_fraction, seed)


def cached_prompts_warning(hit: float | None, shared_prefix_fraction: float, seed: int) -> str | None:
    """The server's prefix-cache hit rate over a run (None: not reported) beyond the workload's shared prefix by
    more than CACHED_BEYOND_SHARED: it saw these prompts before (a second run with the same seed), so TTFT and
    capacity read high (results/cpu-fresh-vs-warm-2026-12-04: 4-7 x lower p95 TTFT)."""
    if hit is None or hit <= shared_prefix_fraction + CACHED_BEYOND_SHARED:
        return None
    return (
        f"warning: the server answered {hit:.0%} of prompt tokens from its prefix cache, against a shared prefix "
        f"of {shared_prefix_fraction:.0%}: it had seen these prompts (--seed {seed} re-sends the same ones), so "
        f"latency and throughput read better than for new prompts; run again with another --seed"
    )
