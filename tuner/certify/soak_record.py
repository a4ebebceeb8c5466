"""One certifying soak as it is stored and told: the rate, what it measured, whether it held and why not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.backlog import mean_lifetime
from loadtest.host_cpu import HostCpu
from loadtest.metrics import sustained_rate
from loadtest.report import LoadReport
from loadtest.slo import SLO
from loadtest.steady import Interval, percentile_interval, window_alone
from loadtest.summary import ReportSummary


@dataclass(frozen=True)
class Soak:
    """One soak: the rate, what it measured, and whether it held (and why not)."""

    rate: float
    seconds: float  # first scheduled send to last end
    holds: bool
    reasons: tuple[str, ...]
    goodput_req_s: float
    throughput_tok_s: float
    throughput_req_s: float  # requests completed per second over the soak (its start and drain included)
    slo_values: dict[str, float | None]
    intervals: dict[str, Interval]  # per SLO: a bootstrap interval of its percentile
    report: ReportSummary
    host: HostCpu | None = None  # how busy the host was during the soak (loadtest.host_cpu)
    server: int = 0  # which fresh server of the certification ran it (0: the first)
    sustained_req_s: float = 0.0  # the rate it kept up with while arrivals lasted (loadtest.metrics; 0.0: unknown)
    lifetimes: float | None = None  # its arrivals' span in mean request lifetimes (None: none ended, or stored before)
    lifetime_s: float | None = None  # the mean request lifetime, send to end
    edge: bool = False  # soaked below a KV-bound edge whose held soaks preempted (tuner.certify.kv_edge), not stepping

    @property
    def unjudged(self) -> bool:
        """Missed on its window alone: every SLO and growth check passed, but its arrivals lasted fewer than
        MIN_LIFETIMES request lifetimes (loadtest.steady), so nothing shows it would have held."""
        return not self.holds and window_alone(self.reasons, self.lifetimes)

    def line(self) -> str:
        # each SLO value counts unanswered requests as misses; its interval is over the answered ones only, so
        # where some went unanswered (a lost soak cut in flight) the interval says so, and the count is given
        unanswered = self.report.requests_failed
        over = "answered: " if unanswered else ""
        vals = ", ".join(
            f"{k} {v:.0f} ms" + (f" [{over}{iv.low:.0f}, {iv.high:.0f}]" if (iv := self.intervals.get(k)) else "")
            for k, v in self.slo_values.items()
            if v is not None
        )
        if unanswered and vals:
            vals += f"; {unanswered} unanswered, counted as misses"
        verdict = "held" if self.holds else "missed: " + "; ".join(self.reasons)
        if not self.holds and self.sustained_req_s > 0:
            verdict += f"; the server kept up with {self.sustained_req_s:.1f} req/s while arrivals lasted"
        if not self.holds and (split := self.report.server.ttft_split()) is not None:
            verdict += f"; {split}"
        shared = f"; {self.host.phrase()}" if self.host is not None and self.host.notable else ""
        below = " below the KV-bound edge" if self.edge else ""
        head = f"soak{below} at {self.rate:.3f} req/s for {self.seconds:.0f} s"
        return f"{head}: {verdict} ({vals or 'no SLO value'}){shared}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate_req_s": self.rate,
            "seconds": self.seconds,
            "holds": self.holds,
            "reasons": list(self.reasons),
            "goodput_req_s": self.goodput_req_s,
            "throughput_tok_s": self.throughput_tok_s,
            "throughput_req_s": self.throughput_req_s,
            "slo_values": dict(self.slo_values),
            "intervals": {k: iv.to_dict() for k, iv in self.intervals.items()},
            "metrics": self.report.to_dict(),
            "server": self.server,
            "sustained_req_s": self.sustained_req_s,
            "lifetimes": self.lifetimes,
            "lifetime_s": self.lifetime_s,
            "edge": self.edge,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Soak:
        intervals = {k: Interval(**iv) for k, iv in (d.get("intervals") or {}).items()}
        report = ReportSummary.from_dict(d.get("metrics") or {})
        return cls(
            d["rate_req_s"],
            d["seconds"],
            d["holds"],
            tuple(d["reasons"]),
            d["goodput_req_s"],
            d["throughput_tok_s"],
            d.get("throughput_req_s", 0.0),
            dict(d["slo_values"]),
            intervals,
            report,
            report.host_cpu,
            d.get("server", 0),  # files before 2026-12-03: one server per soak sequence was not recorded
            d.get("sustained_req_s", 0.0),
            d.get("lifetimes"),  # files before 2026-12-05
            d.get("lifetime_s"),
            bool(d.get("edge", False)),  # files before 2026-12-06, night: no soak below a KV edge
        )


def stepping(soaks: Sequence[Soak]) -> list[Soak]:
    """The soaks that stepped down, bisected and confirmed: all but those below a KV-bound edge."""
    return [s for s in soaks if not s.edge]


def soak_of(rate: float, rep: LoadReport, slos: tuple[SLO, ...]) -> Soak:
    """A Soak from the load report of one soak level."""
    reasons: list[str] = []
    if not rep.slo_met:
        missed = [k for k, v in rep.slo_values.items() if not _met(slos, k, v)]
        reasons.append("whole soak missed " + ", ".join(missed or ["the SLOs"]))
    if rep.steady is not None:
        reasons.extend(rep.steady.reasons)
    intervals = {
        s.key: iv
        for s in slos
        if s.metric in ("ttft", "tpot", "e2e") and (iv := percentile_interval(rep.samples[s.metric], s.percentile))
    }
    return Soak(
        rate,
        rep.duration_s,
        not reasons,
        tuple(reasons),
        rep.goodput_req_s,
        rep.throughput_tok_s,
        rep.throughput_req_s,
        dict(rep.slo_values),
        intervals,
        rep.summary(),
        rep.host,
        sustained_req_s=sustained_rate(rep.records),
        lifetimes=rep.steady.lifetimes if rep.steady is not None else None,
        lifetime_s=mean_lifetime(rep.records),
    )


def _met(slos: tuple[SLO, ...], key: str, value: float | None) -> bool:
    return all(s.met_by(value) for s in slos if s.key == key)
