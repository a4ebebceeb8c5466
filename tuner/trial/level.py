"""One measured load level of the capacity search (tuner.trial.capacity): its record, built from the load
generator's report, and the progress line that says why it passed or not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from loadtest.backlog import mean_lifetime
from loadtest.host_cpu import HostCpu
from loadtest.level_end import JUDGED_LIFETIMES
from loadtest.records import ABANDONED
from loadtest.report import LATE_GENERATOR_MS, LoadReport
from loadtest.server_metrics import ServerSummary
from loadtest.steady import window_alone

# a level line names the rate its arrivals realized when it lies this far from the nominal one: at 2.5 req/s a
# Poisson schedule's count over 180 s varies by ~5 %, and near an edge that decides the verdict (docs/certification.md)
SENT_RATE_NOTED = 0.03


@dataclass(frozen=True)
class Level:
    """One measured load level (a rate, or the saturation probe)."""

    kind: str  # "probe" | "rate"
    rate: float | None
    concurrency: int | None
    slo_met: bool
    goodput_req_s: float
    throughput_req_s: float
    slo_values: dict[str, float | None] = field(default_factory=dict)
    requests_failed: int = 0
    ttft_p95_ms: float | None = None
    tpot_p95_ms: float | None = None
    schedule_lag_p95_ms: float | None = None  # the load generator's own lateness (counted in TTFT)
    failures: dict[str, int] = field(default_factory=dict)  # failed requests by reason
    failure_example: str | None = None  # the first failed request's reason and what the server said
    steady: str | None = None  # loadtest.steady's verdict in a phrase (None: not judged)
    steady_holds: bool = True
    duration_s: float | None = None  # first scheduled send to last end
    host: HostCpu | None = None  # how busy the host was during the level (loadtest.host_cpu)
    # vLLM's /metrics over the level: its queue time and TTFT as the engine saw them tell the front end's share
    # of the client's TTFT from the engine's, which one trial's latencies alone do not (docs/perfmodel.md)
    server: ServerSummary = field(default_factory=ServerSummary)
    lifetimes: float | None = None  # its arrivals' span in mean request lifetimes (None: not judged, or older)
    lifetime_s: float | None = None  # the mean request lifetime, send to end
    unjudged: bool = False  # missed on its window alone: every SLO and other check passed (_window)
    sent_rate: float | None = None  # the arrival rate its schedule realized (loadtest.metrics.sent_rate)

    @property
    def passed(self) -> bool:
        """Every SLO over the whole level, and the level steady (a rate level's verdict)."""
        return self.slo_met and self.steady_holds

    @property
    def errors(self) -> dict[str, int]:
        """Failed requests by reason, less those cancelled because the level was already lost."""
        return {k: v for k, v in self.failures.items() if k != ABANDONED}

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "rate": self.rate,
            "concurrency": self.concurrency,
            "slo_met": self.slo_met,
            "goodput_req_s": self.goodput_req_s,
            "throughput_req_s": self.throughput_req_s,
            "slo_values": dict(self.slo_values),
            "requests_failed": self.requests_failed,
            "ttft_p95_ms": self.ttft_p95_ms,
            "tpot_p95_ms": self.tpot_p95_ms,
            "schedule_lag_p95_ms": self.schedule_lag_p95_ms,
            "failures": dict(self.failures),
            "failure_example": self.failure_example,
            "steady": self.steady,
            "steady_holds": self.steady_holds,
            "duration_s": self.duration_s,
            "host_cpu": self.host.to_dict() if self.host is not None else None,
            "server": self.server.to_dict(),
            "lifetimes": self.lifetimes,
            "lifetime_s": self.lifetime_s,
            "unjudged": self.unjudged,
            "sent_rate": self.sent_rate,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Level:
        """The stored form back; a key an older version did not write takes the field's default."""
        known = {f.name for f in fields(cls)} - {"host", "server"}
        host = d.get("host_cpu")
        return cls(
            **{k: v for k, v in d.items() if k in known},
            host=HostCpu.from_dict(host) if host else None,
            server=ServerSummary.from_dict(d.get("server")),
        )


def level_of(kind: str, rate: float | None, conc: int | None, rep: LoadReport) -> Level:
    lifetimes, lifetime_s, unjudged = _window(kind, rep)
    return Level(
        kind,
        rate,
        conc,
        bool(rep.slo_met),
        rep.goodput_req_s,
        rep.throughput_req_s,
        dict(rep.slo_values),
        rep.requests_failed,
        rep.value("ttft", 95),
        rep.value("tpot", 95),
        rep.value("schedule_lag", 95),
        dict(rep.failures),
        _failure_example(rep),
        *_steadiness(kind, rep),
        rep.duration_s,
        rep.host,
        ServerSummary.from_dict(rep.server),
        lifetimes,
        lifetime_s,
        unjudged,
        rep.sent_rate_req_s if kind == "rate" else None,
    )


def _window(kind: str, rep: LoadReport) -> tuple[float | None, float | None, bool]:
    """A rate level's arrivals in mean request lifetimes, that lifetime, and whether it missed on its window alone:
    every SLO met, and its window the only failed check (loadtest.steady.window_alone)."""
    steady = rep.steady
    if kind == "probe" or steady is None:
        return None, None, False
    unjudged = bool(rep.slo_met) and window_alone(steady.reasons, steady.lifetimes)
    return steady.lifetimes, mean_lifetime(rep.records), unjudged


def unjudged_note(levels: Sequence[Level], best_rate: float, longest_s: float) -> str | None:
    """What a trial's estimate leaves out when a level above it met the SLO but ended unjudged (its requests
    outlived what ``longest_s`` seconds of arrivals can judge); None: none did."""
    short = [lv for lv in levels if lv.unjudged and (lv.rate or 0.0) > best_rate and lv.lifetimes and lv.lifetime_s]
    if not short:
        return None
    lv = max(short, key=lambda x: x.rate or 0.0)
    return (
        f"a level at {lv.rate:.2f} req/s met the SLO but ended unjudged: its arrivals lasted {lv.lifetimes:.1f} "
        f"request lifetimes of {lv.lifetime_s:.1f} s, and a level here sends for at most {longest_s:.0f} s; the "
        f"estimate {best_rate:.3f} req/s may be understated: certifying soaks (--soak-seconds) run on to "
        f"{JUDGED_LIFETIMES:g} lifetimes"
    )


def _steadiness(kind: str, rep: LoadReport) -> tuple[str | None, bool]:
    """A rate level's steady-state verdict (loadtest.steady); the closed-loop probe is not judged."""
    if kind == "probe" or rep.steady is None:
        return None, True
    return rep.steady.summary(), rep.steady.holds


def level_line(level: Level) -> str:
    """One progress line per level: its rate and length, the verdict and why (SLO values, steady state)."""
    what = f"rate {level.rate:.2f}/s" if level.rate is not None else f"probe c={level.concurrency}"
    if level.rate and level.sent_rate and abs(level.sent_rate / level.rate - 1) >= SENT_RATE_NOTED:
        what += f" (sent at {level.sent_rate:.2f}/s)"
    if level.duration_s:
        what += f" for {level.duration_s:.0f} s"
    vals = ", ".join(f"{k} {v:.0f}ms" for k, v in level.slo_values.items() if v is not None) or "lost early"
    verdict = "met" if level.passed else "missed"
    steady = f"; {level.steady}" if level.steady else ""
    lag = level.schedule_lag_p95_ms or 0.0
    behind = f"; load generator behind schedule (p95 {lag:.0f} ms, counted in TTFT)" if lag >= LATE_GENERATOR_MS else ""
    shared = f"; {level.host.phrase()}" if level.host is not None and level.host.notable else ""
    failed = level.errors
    errors = (
        f"; {sum(failed.values())} request(s) failed ({', '.join(f'{k}: {v}' for k, v in failed.items())}"
        f"; first: {level.failure_example})"
        if failed
        else ""
    )
    split = level.server.ttft_split()  # where a missed level's first tokens waited
    where = f"; {split}" if split and not level.passed else ""
    return f"{what}: {verdict} ({vals}{steady}) goodput {level.goodput_req_s:.2f}/s{where}{behind}{shared}{errors}"


def _failure_example(rep: LoadReport) -> str | None:
    """The first request that failed for a reason of its own (not cancelled because its level was lost)."""
    for r in rep.records:
        if r.failure is not None and r.failure != ABANDONED:
            return f"{r.failure}: {r.detail}".strip()[:300] if r.detail else r.failure
    return None
