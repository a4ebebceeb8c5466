"""Is a queue building up within a level? The backlog check of loadtest.steady, over raw records and, when
the server is vLLM, its scheduler gauges as polled during the level.

With vLLM's gauges the check counts the requests **queued**: sent by the client and not running in the
engine (waiting in vLLM's scheduler, preempted, or not yet admitted by its API server), at every poll. A
batch that grows to take in more requests is not a queue: vLLM-CPU's running count swings by tens of
requests within seconds at a steady Poisson rate, and the client's in-flight count with it. Without the
gauges (another server, or scraping off) the check falls back to the client's in-flight count at each
arrival, which cannot tell a growing batch from a queue; the level line says which one was judged.

Both compare the mean of the second quarter of the send window with the last quarter, with a moving-block
bootstrap interval (blocks of about one request lifetime: consecutive counts share requests); growing when
the interval's lower end exceeds the tolerance (``backlog_tolerance``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loadtest.records import RequestRecord
from loadtest.server_metrics import GaugeSample
from loadtest.slo import SLO

CONFIDENCE = 0.90
RESAMPLES = 999
MIN_POINTS = 8  # counts per quarter for an interval
GROWTH_FRACTION = 0.1  # of the TTFT limit, as time in the system
BACKLOG_FRACTION = 0.1  # of the mean in flight (= of the time in the system) when no SLO limits TTFT
BACKLOG_MIN = 2.0  # requests: counting noise at low rates (a 120-s CPU soak at 7.7 req/s read +1.3 at its low end)

QUEUED = "queued"  # sent, not running in vLLM (its gauges)
IN_FLIGHT = "in flight"  # sent, not finished (the client's records alone)


@dataclass(frozen=True)
class Growth:
    """A bootstrap interval of the last quarter's mean count minus the second quarter's."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class Backlog:
    """The backlog check's figures: what was counted (``basis``), each quarter's mean, the growth interval
    (None when a quarter had fewer than MIN_POINTS counts)."""

    basis: str
    second_quarter: float | None
    last_quarter: float | None
    growth: Growth | None


def backlog_tolerance(slos: Sequence[SLO], rate: float, in_flight: float) -> float:
    """Requests more that the level may end with: the TTFT growth tolerance as time in the system at ``rate``
    (Little's law), or a tenth of ``in_flight`` without a TTFT SLO; at least BACKLOG_MIN."""
    limits = [s.limit_ms for s in slos if s.metric == "ttft"]
    extra = rate * GROWTH_FRACTION * min(limits) / 1000.0 if limits else BACKLOG_FRACTION * in_flight
    return max(BACKLOG_MIN, extra)


def _counter(recs: Sequence[RequestRecord], start_at_send: bool) -> tuple[list[float], list[float]]:
    starts = sorted(r.sent_at if start_at_send else r.scheduled_at for r in recs)
    ends = sorted(r.done_at if r.done_at is not None else math.inf for r in recs)
    return starts, ends


def _count(starts: list[float], ends: list[float], t: float) -> int:
    return bisect.bisect_right(starts, t) - bisect.bisect_right(ends, t)


def block_resamples(n: int, block: int, rng: np.random.Generator) -> np.ndarray:
    """RESAMPLES × ``n`` indices of a circular block bootstrap: runs of ``block`` consecutive items (at most a
    quarter of them), so that a resample keeps the dependence between neighbours (requests that shared the
    server at the same time). The runs wrap around the end, so every item is drawn equally often: without the
    wrap the last items of a rising series were under-drawn and an interval could miss its own estimate."""
    block = int(min(max(1, block), max(1, n // 4)))
    starts = rng.integers(0, n, size=(RESAMPLES, -(-n // block)))
    return np.asarray(((starts[:, :, None] + np.arange(block)) % n).reshape(RESAMPLES, -1)[:, :n])


def _block_means(x: np.ndarray, block: int, rng: np.random.Generator) -> np.ndarray:
    return np.asarray(x[block_resamples(x.size, block, rng)].mean(axis=1))


def _compare(second: np.ndarray, last: np.ndarray, block: int, basis: str, seed: int) -> Backlog:
    q2 = float(second.mean()) if second.size else None
    q4 = float(last.mean()) if last.size else None
    if second.size < MIN_POINTS or last.size < MIN_POINTS:
        return Backlog(basis, q2, q4, None)
    rng = np.random.default_rng(seed)
    diff = _block_means(last, block, rng) - _block_means(second, block, rng)
    lo, hi = np.percentile(diff, [50 * (1 - CONFIDENCE), 100 - 50 * (1 - CONFIDENCE)])
    return Backlog(basis, q2, q4, Growth(float(last.mean() - second.mean()), float(lo), float(hi)))


def in_flight_backlog(recs: Sequence[RequestRecord], t0: float, span: float, seed: int = 0) -> Backlog:
    """Requests in flight (scheduled, not yet ended) at each arrival of the second and the last quarter;
    blocks of about one lifetime (Little: the mean count is the arrivals per lifetime)."""
    starts, ends = _counter(recs, start_at_send=False)

    def quarter(a: float, b: float) -> np.ndarray:
        return np.asarray([_count(starts, ends, t) for t in starts if a <= t < b], dtype=float)

    second, last = quarter(t0 + span / 4, t0 + span / 2), quarter(t0 + 3 * span / 4, t0 + span + 1e-9)
    block = round(float(second.mean())) if second.size else 1
    return _compare(second, last, block, IN_FLIGHT, seed)


def mean_lifetime(recs: Sequence[RequestRecord]) -> float | None:
    """Mean seconds from send to end of the requests that ended (None when none did)."""
    done = [r.done_at - r.sent_at for r in recs if r.done_at is not None]
    return sum(done) / len(done) if done else None


def queued_backlog(
    recs: Sequence[RequestRecord],
    gauges: Sequence[GaugeSample],
    t0: float,
    span: float,
    lifetime: float | None,
    seed: int = 0,
) -> Backlog | None:
    """Requests sent and not running in vLLM at each gauge poll of the second and the last quarter; None when
    the polls are too few to judge on (then ``in_flight_backlog`` is the check)."""
    polls = sorted((g for g in gauges if t0 <= g.t <= t0 + span), key=lambda g: g.t)
    if len(polls) < 4 * MIN_POINTS:
        return None
    starts, ends = _counter(recs, start_at_send=True)

    def quarter(a: float, b: float) -> np.ndarray:
        return np.asarray([max(0.0, _count(starts, ends, g.t) - g.running) for g in polls if a <= g.t < b])

    interval = span / max(1, len(polls) - 1)
    second, last = quarter(t0 + span / 4, t0 + span / 2), quarter(t0 + 3 * span / 4, t0 + span + 1e-9)
    return _compare(second, last, round((lifetime or 0.0) / interval), QUEUED, seed)
