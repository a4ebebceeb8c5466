"""One simulated vLLM server: the engine (``perfmodel.engine``) behind its front end, kept across load levels
the way one launched server is (its prefix cache survives from level to level).

The front end is one FIFO worker: a request costs ``per_request_s`` when it arrives (only then does the
engine see it), each engine step's output ``per_token_s`` per streamed token (only then does the client see
those tokens). Levels end when every request has ended; with ``abandon`` a level stops as soon as an SLO is
certainly lost, as ``loadtest``'s MissCounter stops the tuner's levels (the rest is cancelled).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

from loadtest.abandon import allowed_misses
from loadtest.slo import SLO
from perfmodel.config import EngineConfig
from perfmodel.costs import Costs
from perfmodel.engine import Engine
from perfmodel.outcome import LevelOutcome, Served
from perfmodel.traffic import ClosedLoad, OpenLoad, Request

LEVEL_GAP_S = 0.05  # between two levels of one server (the load generator's own set-up)


@dataclass
class _Level:
    """One level's requests as the load generator tracks them (by level index)."""

    requests: tuple[Request, ...]
    sends: list[tuple[float, int]]  # (send time, index) not yet through the front end: a heap
    next_closed: int  # closed loop: the next request a client will send
    sent: list[float]
    first: list[float | None]
    end: list[float | None]
    left: int
    misses: _MissCounter | None
    lost: bool = False  # an SLO can no longer be met (with abandon): the level stops


class Server:
    def __init__(self, cfg: EngineConfig, costs: Costs) -> None:
        self.engine = Engine(cfg, costs)
        self.costs = costs
        self.now = 0.0
        self.front_free = 0.0  # when the front end has worked off its queue
        self._visible: deque[tuple[float, int]] = deque()  # (when the engine sees it, level index)
        self._of_rid: dict[int, int] = {}
        self._reached: dict[int, float] = {}  # when the engine saw each request (vLLM's arrival time), by rid

    def run(self, load: OpenLoad | ClosedLoad, slos: tuple[SLO, ...] = (), abandon: bool = False) -> LevelOutcome:
        """Serve one level from the server's current state; the server's clock ends past its last request."""
        n = len(load.requests)
        level = self._level(load, slos if abandon else None)
        eng = self.engine
        hits0, queries0, preempt0, peak = eng.hit_tokens, eng.queried_tokens, eng.preemptions, 0
        eng.pool.peak_used = eng.pool.used
        self._visible.clear()
        self._of_rid.clear()
        self._reached.clear()
        itl = [0.0, 0]  # vLLM's inter-token latency as /metrics sums it: seconds over tokens after the first
        ttft = [0.0, 0]  # engine-side TTFT: the first token's step end less the engine's arrival
        last_end: float | None = None
        while level.left:
            if not eng.busy:
                if not self._idle_until_next(level):
                    break
                continue
            step = eng.step()
            if step is None:  # requests that can never be scheduled (cannot happen within the budget)
                raise RuntimeError("the simulated engine holds requests it can never schedule")
            end = self.now + step.duration_s
            peak = max(peak, step.seqs)
            later = step.tokens - len(step.first)  # each came one step period after its request's last token
            itl[0] += (end - (self.now if last_end is None else last_end)) * later
            itl[1] += later
            last_end = end
            self._front_in(level, end)  # requests that arrived during the step queue before its output
            self.front_free = max(self.front_free, end) + self.costs.per_token_s * step.tokens
            for rid in step.first:
                level.first[self._of_rid[rid]] = self.front_free
                ttft[0] += end - self._reached[rid]
                ttft[1] += 1
            for rid in step.done:
                self._ended(level, self._of_rid[rid], self.front_free)
            self.now = max(end, self.front_free) if self.costs.shared_front_end else end
            if level.lost:
                self._cancel(level)
                break
            self._to_engine(level)
        self.now = max([self.now] + [t for t in level.end if t is not None])
        hit_rate = None
        if eng.cfg.prefix_caching and eng.queried_tokens > queries0:
            hit_rate = (eng.hit_tokens - hits0) / (eng.queried_tokens - queries0)
        served = tuple(
            Served(level.sent[i], level.first[i], level.end[i], load.requests[i].output_tokens) for i in range(n)
        )
        return LevelOutcome(
            served,
            rate=load.rate if isinstance(load, OpenLoad) else None,
            concurrency=load.concurrency if isinstance(load, ClosedLoad) else None,
            abandoned=level.misses is not None and level.misses.lost,
            preemptions=eng.preemptions - preempt0,
            prefix_hit_rate=hit_rate,
            running_peak=peak,
            kv_usage_peak=eng.pool.peak_used / eng.pool.total,
            engine_itl_ms=1e3 * itl[0] / itl[1] if itl[1] else None,
            engine_ttft_ms=1e3 * ttft[0] / ttft[1] if ttft[1] else None,
        )

    def _idle_until_next(self, level: _Level) -> bool:
        """The engine is idle: move the clock to the next request that reaches it (refused ones never do) and hand
        it over; False when none will (the level is over, or abandoned)."""
        while not self._visible and level.sends and not level.lost:
            self._front_in(level, level.sends[0][0])
        if level.lost:
            self._cancel(level)
            return False
        if not self._visible:
            return False
        self.now = max(self.now, self._visible[0][0])
        self._to_engine(level)
        return True

    def _level(self, load: OpenLoad | ClosedLoad, abandon_on: tuple[SLO, ...] | None) -> _Level:
        """A level's send schedule from now (an open load's arrivals, or a closed load's first wave); with
        ``abandon_on``, the count of SLO misses that abandons it."""
        n = len(load.requests)
        start = self.now + LEVEL_GAP_S
        if isinstance(load, OpenLoad):
            sends, next_closed = [(start + off, i) for i, off in enumerate(load.offsets_s)], n
        else:
            first_wave = min(load.concurrency, n)
            sends, next_closed = [(start, i) for i in range(first_wave)], first_wave
        heapq.heapify(sends)
        level = _Level(load.requests, sends, next_closed, [0.0] * n, [None] * n, [None] * n, n, None)
        if abandon_on is not None:
            level.misses = _MissCounter(abandon_on, n)
        return level

    def _front_in(self, level: _Level, until: float) -> None:
        """Requests sent by ``until`` pass the front end, in order; one too long for ``max_model_len`` is
        refused there (vLLM answers HTTP 400)."""
        while level.sends and level.sends[0][0] <= until:
            t, i = heapq.heappop(level.sends)
            level.sent[i] = t
            self.front_free = max(self.front_free, t) + self.costs.per_request_s
            r = level.requests[i]
            if r.prompt_tokens + r.output_tokens > self.engine.cfg.max_model_len:
                self._ended(level, i, None)
                continue
            self._visible.append((self.front_free, i))

    def _to_engine(self, level: _Level) -> None:
        while self._visible and self._visible[0][0] <= self.now:
            reached, i = self._visible.popleft()
            r = level.requests[i]
            rid = self.engine.add(r.key, r.prompt_tokens, r.output_tokens)
            self._of_rid[rid] = i
            self._reached[rid] = reached

    def _ended(self, level: _Level, i: int, when: float | None) -> None:
        """Request ``i`` ended at ``when`` (None: failed); its client sends the next one. With ``abandon``,
        the level is lost once its SLO certainly is."""
        level.end[i] = when
        level.left -= 1
        if level.next_closed < len(level.requests):
            heapq.heappush(level.sends, (when if when is not None else level.sent[i], level.next_closed))
            level.next_closed += 1
        if level.misses is not None:
            served = Served(level.sent[i], level.first[i], when, level.requests[i].output_tokens)
            level.lost = level.misses.add(served) or level.lost

    def _cancel(self, level: _Level) -> None:
        """The load generator gives up on the level: what is in flight is cancelled, nothing more is sent."""
        mine = {rid for rid, i in self._of_rid.items() if level.end[i] is None}
        self.engine.abort(mine)
        for i in range(len(level.requests)):
            if level.end[i] is None:
                level.first[i] = None
        level.sends.clear()
        self._visible.clear()
        level.left = 0


class _MissCounter:
    """``loadtest.abandon.MissCounter`` over simulated requests: True once an SLO cannot be met any more."""

    def __init__(self, slos: tuple[SLO, ...], planned: int) -> None:
        self.slos = tuple(s for s in slos if s.metric in ("ttft", "tpot", "e2e"))
        self.allowed = {s.key: allowed_misses(planned, s.percentile) for s in self.slos}
        self.misses = dict.fromkeys(self.allowed, 0)
        self.lost = False

    def add(self, served: Served) -> bool:
        for slo in self.slos:
            v = served.latency_ms(slo.metric)
            if not served.ok or (v is not None and v > slo.limit_ms):
                self.misses[slo.key] += 1
                self.lost = self.lost or self.misses[slo.key] > self.allowed[slo.key]
        return self.lost
