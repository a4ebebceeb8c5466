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
- **backlog**: the mean number of requests in flight (sent, not finished) at the arrivals of the last
  quarter of the send window against the second quarter; growing when the lower end of a block-bootstrap
  interval of that difference exceeds the growth tolerance in requests: by Little's law, ΔN requests more
  in flight at λ req/s are ΔN/λ seconds more in the system, so the tolerance is λ times the TTFT growth
  tolerance (a tenth of the mean time in the system when no SLO limits TTFT), and at least BACKLOG_MIN.
  Batched decoding can absorb a slowly growing queue without TTFT showing it within the level.

Fewer than ``MIN_HALF`` successful requests in a half: growth is not judged (the level says so).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadtest.records import RequestRecord
from loadtest.slo import SLO

SETTLE = 0.1  # of the send window, left out of the growth comparison
MIN_HALF = 8  # successful requests per half for a growth interval
CONFIDENCE = 0.90
RESAMPLES = 999
GROWTH_FRACTION = 0.1  # of the TTFT limit
BACKLOG_FRACTION = 0.1  # of the mean in flight (= of the time in the system) when no SLO limits TTFT
BACKLOG_MIN = 2.0  # requests: counting noise at low rates (a 120-s CPU soak at 7.7 req/s read +1.3 at its low end)


@dataclass(frozen=True)
class Interval:
    """A bootstrap percentile interval of one statistic (ms), at ``confidence``."""

    estimate: float
    low: float
    high: float
    confidence: float = CONFIDENCE

    def to_dict(self) -> dict[str, float]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "confidence": self.confidence}


@dataclass(frozen=True)
class Steadiness:
    """The three checks of one level; ``holds`` when none failed. ``reasons``: one phrase per failed check."""

    tail_slo_values: dict[str, float | None]
    tail_met: bool
    ttft_growth: Interval | None  # p95 TTFT, last half − first half
    growth_tolerance_ms: float | None
    backlog_second_quarter: float | None  # mean requests in flight
    backlog_last_quarter: float | None
    backlog_growth: Interval | None  # mean in flight, last quarter − second quarter
    reasons: tuple[str, ...]

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
        }


def percentile_interval(values: Sequence[float], pct: float = 95.0, seed: int = 0) -> Interval | None:
    """Bootstrap interval of the pct-th percentile of ``values`` (None when fewer than MIN_HALF)."""
    if len(values) < MIN_HALF:
        return None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    boot = np.percentile(rng.choice(data, size=(RESAMPLES, data.size)), pct, axis=1)
    lo, hi = np.percentile(boot, [50 * (1 - CONFIDENCE), 100 - 50 * (1 - CONFIDENCE)])
    return Interval(float(np.percentile(data, pct)), float(lo), float(hi))


def _p95_difference(first: Sequence[float], last: Sequence[float], seed: int) -> Interval:
    """Bootstrap interval of p95(last) − p95(first), resampling each half on its own."""
    a, b = np.asarray(first, dtype=float), np.asarray(last, dtype=float)
    rng = np.random.default_rng(seed)
    boot_a = np.percentile(rng.choice(a, size=(RESAMPLES, a.size)), 95, axis=1)
    boot_b = np.percentile(rng.choice(b, size=(RESAMPLES, b.size)), 95, axis=1)
    diff = boot_b - boot_a
    lo, hi = np.percentile(diff, [50 * (1 - CONFIDENCE), 100 - 50 * (1 - CONFIDENCE)])
    return Interval(float(np.percentile(b, 95) - np.percentile(a, 95)), float(lo), float(hi))


def _ttft_ms(rec: RequestRecord) -> float | None:
    return (rec.chunks[0].t - rec.scheduled_at) * 1000.0 if rec.ok and rec.chunks else None


def _in_flight(recs: Sequence[RequestRecord], t0: float, t1: float) -> list[int]:
    """Requests in flight (scheduled, not yet ended) at each arrival within [t0, t1)."""
    starts = sorted(r.scheduled_at for r in recs)
    ends = sorted(r.done_at if r.done_at is not None else math.inf for r in recs)
    return [bisect.bisect_right(starts, t) - bisect.bisect_right(ends, t) for t in starts if t0 <= t < t1]


def _block_means(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """RESAMPLES moving-block bootstrap means of ``x``: consecutive counts overlap the same requests, so
    blocks last about one request lifetime (Little: the mean count is the arrivals per lifetime)."""
    block = int(min(max(1, round(float(x.mean()))), max(1, x.size // 4)))
    starts = rng.integers(0, x.size - block + 1, size=(RESAMPLES, -(-x.size // block)))
    idx = (starts[:, :, None] + np.arange(block)).reshape(RESAMPLES, -1)[:, : x.size]
    return np.asarray(x[idx].mean(axis=1))


def backlog_growth(
    recs: Sequence[RequestRecord], t0: float, span: float, seed: int = 0
) -> tuple[float | None, float | None, Interval | None]:
    """(mean in flight over the second quarter, over the last quarter, a bootstrap interval of their
    difference); the interval is None when a quarter has fewer than MIN_HALF arrivals."""
    second = np.asarray(_in_flight(recs, t0 + span / 4, t0 + span / 2), dtype=float)
    last = np.asarray(_in_flight(recs, t0 + 3 * span / 4, t0 + span + 1e-9), dtype=float)
    q2 = float(second.mean()) if second.size else None
    q4 = float(last.mean()) if last.size else None
    if second.size < MIN_HALF or last.size < MIN_HALF:
        return q2, q4, None
    rng = np.random.default_rng(seed)
    diff = _block_means(last, rng) - _block_means(second, rng)
    lo, hi = np.percentile(diff, [50 * (1 - CONFIDENCE), 100 - 50 * (1 - CONFIDENCE)])
    return q2, q4, Interval(float(last.mean() - second.mean()), float(lo), float(hi))


def backlog_tolerance(slos: Sequence[SLO], rate: float, in_flight: float) -> float:
    """Requests more in flight that the level may end with: the TTFT growth tolerance as time in the system
    at ``rate`` (Little's law), or a tenth of ``in_flight`` without a TTFT SLO; at least BACKLOG_MIN."""
    limits = [s.limit_ms for s in slos if s.metric == "ttft"]
    extra = rate * GROWTH_FRACTION * min(limits) / 1000.0 if limits else BACKLOG_FRACTION * in_flight
    return max(BACKLOG_MIN, extra)


def growth_tolerance(slos: Sequence[SLO], first_half_p95: float) -> float:
    limits = [s.limit_ms for s in slos if s.metric == "ttft"]
    return GROWTH_FRACTION * min(limits) if limits else max(50.0, 0.5 * first_half_p95)


def judge(
    records: Sequence[RequestRecord],
    slos: Sequence[SLO],
    tail_values: dict[str, float | None],
    seed: int = 0,
) -> Steadiness | None:
    """Judge the measured (non-warmup) ``records`` of one level; ``tail_values`` are the SLO values over
    the last half (computed by the caller, the one metrics function). None when nothing was measured."""
    recs = sorted((r for r in records if not r.warmup), key=lambda r: r.scheduled_at)
    if len(recs) < 2:
        return None
    t0, t1 = recs[0].scheduled_at, recs[-1].scheduled_at
    span = max(t1 - t0, 1e-9)
    mid = t0 + span / 2
    reasons: list[str] = []
    tail_met = all(s.met_by(tail_values.get(s.key)) for s in slos)
    if not tail_met:
        missed = [f"{s.key} {_fmt(tail_values.get(s.key))}" for s in slos if not s.met_by(tail_values.get(s.key))]
        reasons.append("last half missed " + ", ".join(missed))
    first = [v for r in recs if t0 + SETTLE * span <= r.scheduled_at < mid and (v := _ttft_ms(r)) is not None]
    last = [v for r in recs if r.scheduled_at >= mid and (v := _ttft_ms(r)) is not None]
    growth, tolerance = None, None
    if len(first) >= MIN_HALF and len(last) >= MIN_HALF:
        growth = _p95_difference(first, last, seed)
        tolerance = growth_tolerance(slos, float(np.percentile(first, 95)))
        if growth.low > tolerance:
            reasons.append(
                f"p95 TTFT grew {growth.estimate:+.0f} ms from the first half to the last "
                f"({CONFIDENCE:.0%} interval [{growth.low:+.0f}, {growth.high:+.0f}], tolerance {tolerance:.0f})"
            )
    second_q, last_q, backlog = backlog_growth(recs, t0, span, seed)
    if backlog is not None and second_q is not None:
        allowed = backlog_tolerance(slos, len(recs) / span, second_q)
        if backlog.low > allowed:
            reasons.append(
                f"requests in flight grew from {second_q:.1f} to {last_q:.1f} ({CONFIDENCE:.0%} interval of the "
                f"growth [{backlog.low:+.1f}, {backlog.high:+.1f}], tolerance {allowed:.1f}): a queue building up"
            )
    return Steadiness(dict(tail_values), tail_met, growth, tolerance, second_q, last_q, backlog, tuple(reasons))


def _fmt(v: float | None) -> str:
    return "unmeasured" if v is None else f"{v:,.0f} ms"
