"""Is a load level in steady state? A pure judgement over raw records (no clock, no I/O).

A level that meets its SLOs on average can still be unstable: when requests arrive faster than the
server completes them, its queue grows for as long as the load lasts, and a short level ends before
the latencies show it. Three checks, each over the requests in scheduled-send order:

- **tail**: every SLO also holds over the requests scheduled in the level's last half (failures
  count as misses, as over the whole level);
- **growth**: p95 TTFT of the last half against the first half (the first ``SETTLE`` of the send
  window left out: an empty server answers its first requests at once); the level is growing when
  the lower end of a bootstrap interval of that difference exceeds a tolerance (a tenth of the
  TTFT limit, or half the first half's p95 when no SLO limits TTFT);
- **backlog** (loadtest.backlog): the mean number of requests queued (sent, not running in vLLM, from its
  gauges; without them: in flight, sent and not finished) over the last quarter of the send window against
  the second quarter; growing when the lower end of a block-bootstrap interval of that difference exceeds
  the growth tolerance in requests: by Little's law, ΔN requests more waiting at λ req/s are ΔN/λ seconds
  more in the system, so the tolerance is λ times the TTFT growth tolerance, and at least BACKLOG_MIN.

- **lifetimes**: the send window must last ``MIN_LIFETIMES`` mean request lifetimes (send to end). The
  quarters above compare a full server only when the second quarter starts after one lifetime; and a server
  that completes less than arrives keeps its TTFT low while its batch grows (chunked prefill admits every
  arrival), so its requests live longer and longer and the window holds fewer of them (docs/certification.md:
  soaks of 1.3–1.8 lifetimes held at rates vLLM's own benchmark then missed).

Fewer than ``MIN_HALF`` successful requests in a half: growth is not judged (the level says so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loadtest.backlog import (
    QUEUED,
    Backlog,
    backlog_tolerance,
    block_resamples,
    in_flight_backlog,
    mean_lifetime,
    queued_backlog,
)
from loadtest.records import RequestRecord
from loadtest.server_metrics import GaugeSample
from loadtest.slo import SLO

SETTLE = 0.1  # of the send window, left out of the growth comparison
MIN_HALF = 8  # successful requests per half for a growth interval
CONFIDENCE = 0.90
RESAMPLES = 999
GROWTH_FRACTION = 0.1  # of the TTFT limit
MIN_LIFETIMES = 4.0  # mean request lifetimes a send window must last to be judged steady


def window_alone(reasons: Sequence[str], lifetimes: float | None) -> bool:
    """Whether a run's only failed check (``reasons``, one each) is its window: arrivals that lasted fewer than
    MIN_LIFETIMES request lifetimes, so nothing shows whether it would have held."""
    return len(reasons) == 1 and lifetimes is not None and lifetimes < MIN_LIFETIMES


@dataclass(frozen=True)
class Interval:
    """A bootstrap percentile interval of one statistic (ms), at ``confidence``."""

    estimate: float
    low: float
    high: float
    confidence: float = CONFIDENCE

    def to_dict(self) -> dict[str, float]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "confidence": self.confidence}

    @classmethod
    def from_dict(cls, d: Mapping[str, float] | None) -> Interval | None:
        return cls(**d) if d else None


@dataclass(frozen=True)
class Steadiness:
    """The three checks of one level; ``holds`` when none failed. ``reasons``: one phrase per failed check."""

    tail_slo_values: dict[str, float | None]
    tail_met: bool
    ttft_growth: Interval | None  # p95 TTFT, last half − first half
    growth_tolerance_ms: float | None
    backlog_second_quarter: float | None  # mean requests queued (or in flight: backlog_basis)
    backlog_last_quarter: float | None
    backlog_growth: Interval | None  # last quarter − second quarter
    reasons: tuple[str, ...]
    backlog_basis: str | None = None  # loadtest.backlog.QUEUED (vLLM's gauges) or IN_FLIGHT (the client alone)
    lifetimes: float | None = None  # the send window in mean request lifetimes (None: none ended, or stored before)

    @property
    def holds(self) -> bool:
        return not self.reasons

    def summary(self) -> str:
        """One phrase for a progress line: why the level is (not) steady."""
        if self.reasons:
            return "not steady: " + "; ".join(self.reasons)
        parts = ["last half within the SLOs"]
        if self.ttft_growth is not None:
            g = self.ttft_growth
            parts.append(f"p95 TTFT change {g.estimate:+.0f} ms [{g.low:+.0f}, {g.high:+.0f}]")
        else:
            parts.append("growth not judged (too few requests)")
        q2, q4 = self.backlog_second_quarter, self.backlog_last_quarter
        if self.backlog_basis == QUEUED and q2 is not None and q4 is not None:
            parts.append(f"queued in vLLM {q2:.1f} → {q4:.1f}")
        if self.lifetimes is not None:
            parts.append(f"{self.lifetimes:.0f} request lifetimes")
        return "steady: " + ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {
            "holds": self.holds,
            "reasons": list(self.reasons),
            "tail_slo_values": dict(self.tail_slo_values),
            "tail_met": self.tail_met,
            "ttft_growth_ms": self.ttft_growth.to_dict() if self.ttft_growth else None,
            "growth_tolerance_ms": self.growth_tolerance_ms,
            "backlog_second_quarter": self.backlog_second_quarter,
            "backlog_last_quarter": self.backlog_last_quarter,
            "backlog_growth": self.backlog_growth.to_dict() if self.backlog_growth else None,
            "backlog_basis": self.backlog_basis,
            "lifetimes": self.lifetimes,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Steadiness:
        """The stored form back (``holds`` follows from the reasons); checks a version did not make stay None."""
        return cls(
            dict(d.get("tail_slo_values") or {}),
            bool(d.get("tail_met", True)),
            Interval.from_dict(d.get("ttft_growth_ms")),
            d.get("growth_tolerance_ms"),
            d.get("backlog_second_quarter"),
            d.get("backlog_last_quarter"),
            Interval.from_dict(d.get("backlog_growth")),
            tuple(d.get("reasons") or ()),
            d.get("backlog_basis"),
            d.get("lifetimes"),
        )


def percentile_interval(values: Sequence[float], pct: float = 95.0, seed: int = 0) -> Interval | None:
    """Bootstrap interval of the pct-th percentile of ``values`` (None when fewer than MIN_HALF)."""
    if len(values) < MIN_HALF:
        return None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    boot = np.percentile(rng.choice(data, size=(RESAMPLES, data.size)), pct, axis=1)
    lo, hi = np.percentile(boot, [50 * (1 - CONFIDENCE), 100 - 50 * (1 - CONFIDENCE)])
    return Interval(float(np.percentile(data, pct)), float(lo), float(hi))


def _p95_difference(first: Sequence[float], last: Sequence[float], block: int, seed: int) -> Interval:
    """Bootstrap interval of p95(last) − p95(first), each half resampled on its own in blocks of ``block``
    requests in send order: TTFTs of requests that met the same burst move together, and resampling them one
    by one makes the interval too narrow (docs/certification.md)."""
    a, b = np.asarray(first, dtype=float), np.asarray(last, dtype=float)
    rng = np.random.default_rng(seed)
    boot_a = np.percentile(a[block_resamples(a.size, block, rng)], 95, axis=1)
    boot_b = np.percentile(b[block_resamples(b.size, block, rng)], 95, axis=1)
    diff = boot_b - boot_a
    lo, hi = np.percentile(diff, [50 * (1 - CONFIDENCE), 100 - 50 * (1 - CONFIDENCE)])
    return Interval(float(np.percentile(b, 95) - np.percentile(a, 95)), float(lo), float(hi))


def _requests_per_lifetime(rate: float, lifetime: float | None) -> int:
    """Arrivals during one mean time in the system (Little: the mean number in flight), at least 1."""
    return max(1, round(rate * lifetime)) if lifetime else 1


def _ttft_ms(rec: RequestRecord) -> float | None:
    return (rec.chunks[0].t - rec.scheduled_at) * 1000.0 if rec.ok and rec.chunks else None


def growth_tolerance(slos: Sequence[SLO], first_half_p95: float) -> float:
    limits = [s.limit_ms for s in slos if s.metric == "ttft"]
    return GROWTH_FRACTION * min(limits) if limits else max(50.0, 0.5 * first_half_p95)


def judge(
    records: Sequence[RequestRecord],
    slos: Sequence[SLO],
    tail_values: dict[str, float | None],
    seed: int = 0,
    gauges: Sequence[GaugeSample] = (),
) -> Steadiness | None:
    """Judge the measured (non-warmup) ``records`` of one level; ``tail_values`` are the SLO values over
    the last half (computed by the caller, the one metrics function). None when nothing was measured."""
    recs = sorted((r for r in records if not r.warmup), key=lambda r: r.scheduled_at)
    if len(recs) < 2:
        return None
    t0, t1 = recs[0].scheduled_at, recs[-1].scheduled_at
    span = max(t1 - t0, 1e-9)
    mid = t0 + span / 2
    rate, lifetime = len(recs) / span, mean_lifetime(recs)
    reasons: list[str] = []
    tail_met = all(s.met_by(tail_values.get(s.key)) for s in slos)
    if not tail_met:
        missed = [f"{s.key} {_fmt(tail_values.get(s.key))}" for s in slos if not s.met_by(tail_values.get(s.key))]
        reasons.append("last half missed " + ", ".join(missed))
    first = [v for r in recs if t0 + SETTLE * span <= r.scheduled_at < mid and (v := _ttft_ms(r)) is not None]
    last = [v for r in recs if r.scheduled_at >= mid and (v := _ttft_ms(r)) is not None]
    growth, tolerance = None, None
    if len(first) >= MIN_HALF and len(last) >= MIN_HALF:
        growth = _p95_difference(first, last, _requests_per_lifetime(rate, lifetime), seed)
        tolerance = growth_tolerance(slos, float(np.percentile(first, 95)))
        if growth.low > tolerance:
            reasons.append(
                f"p95 TTFT grew {growth.estimate:+.0f} ms from the first half to the last "
                f"({CONFIDENCE:.0%} interval [{growth.low:+.0f}, {growth.high:+.0f}], tolerance {tolerance:.0f})"
            )
    lifetimes = span / lifetime if lifetime else None
    if lifetimes is not None and lifetimes < MIN_LIFETIMES:
        reasons.append(
            f"arrivals lasted {span:.0f} s, {lifetimes:.1f} mean request lifetimes ({lifetime:.1f} s each), fewer than "
            f"{MIN_LIFETIMES:g}: requests that outlive the window mean a batch still growing, or one not yet shown "
            "to stop"
        )
    backlog = queued_backlog(recs, gauges, t0, span, lifetime, seed) or in_flight_backlog(recs, t0, span, seed)
    reason = _backlog_reason(backlog, slos, rate, lifetime)
    if reason:
        reasons.append(reason)
    g = backlog.growth
    return Steadiness(
        dict(tail_values),
        tail_met,
        growth,
        tolerance,
        backlog.second_quarter,
        backlog.last_quarter,
        Interval(g.estimate, g.low, g.high) if g else None,
        tuple(reasons),
        backlog.basis,
        lifetimes,
    )


def _backlog_reason(backlog: Backlog, slos: Sequence[SLO], rate: float, lifetime: float | None) -> str | None:
    g, q2, q4 = backlog.growth, backlog.second_quarter, backlog.last_quarter
    if g is None or q2 is None or q4 is None:
        return None
    in_flight = rate * lifetime if lifetime else q2
    allowed = backlog_tolerance(slos, rate, in_flight)
    if g.low <= allowed:
        return None
    queued = backlog.basis == QUEUED
    what = "queued (sent, not running in vLLM)" if queued else "in flight"
    unread = "" if queued else " (vLLM's running count not read)"
    return (
        f"requests {what} grew from {q2:.1f} to {q4:.1f} ({CONFIDENCE:.0%} interval of the growth "
        f"[{g.low:+.1f}, {g.high:+.1f}], tolerance {allowed:.1f}): a queue building up{unread}"
    )


def _fmt(v: float | None) -> str:
    return "unmeasured" if v is None else f"{v:,.0f} ms"
