"""Run a load test: :class:`LoadSpec` in, :class:`LoadReport` out.

Open loop (``rate``): requests are sent on a pre-computed schedule whatever the server does; each
record keeps its scheduled time, so client lag counts in TTFT. Closed loop (``concurrency``): C
workers each send the next request as soon as their previous one ends. ``warmup`` requests run
first, closed loop, and are left out of the report. ``run_load`` is synchronous (one
``asyncio.run``), for the tuner; ``run_load_async`` is the same inside a running loop.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import math
import resource
from dataclasses import replace

from loadtest import arrivals
from loadtest.abandon import InFlight, MissCounter, level_records
from loadtest.client import Prepared, build_body, send
from loadtest.errors import LoadtestInputError, ServerUnreachable
from loadtest.host_cpu import HostCpuMeter
from loadtest.level_end import LevelEnd
from loadtest.metrics import compute_metrics
from loadtest.prebuild import Prebuilt
from loadtest.prompts import PromptFactory, load_tokenizer
from loadtest.records import Chunk, RequestRecord
from loadtest.report import LoadReport
from loadtest.server_metrics import Scraper, summarize
from loadtest.spec import ENDPOINTS, LoadSpec, base_url, check_server, next_rate_window_s, rate_window_s, validate
from loadtest.transport import AiohttpTransport, Clock, MonotonicClock, Transport

PREBUILD_BEFORE_S = 30.0  # of a level's arrivals built before its clock starts (its minimum, up to this)
PREBUILD_AHEAD_S = 2.0  # of arrivals the build thread keeps ready past the latest send

__all__ = ["ENDPOINTS", "LoadSpec", "base_url", "check_server", "run_load", "run_load_async", "validate"]


def _raise_fd_limit() -> None:
    """≥ 2,000 concurrent streams need as many sockets: lift the soft open-files limit to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 1 << 20, hard))
        except (ValueError, OSError):
            pass


class _Run:
    def __init__(self, spec: LoadSpec, transport: Transport, clock: Clock) -> None:
        self.spec, self.transport, self.clock = spec, transport, clock
        self.url = base_url(spec.url) + ENDPOINTS[spec.endpoint]
        tok = load_tokenizer(spec.tokenizer) if spec.tokenizer else None
        self.factory = PromptFactory(
            spec.workload,
            seed=spec.seed,
            tokenizer=tok,
            output_tokens=spec.output_tokens,
            chat=spec.endpoint == "chat",
        )
        self.continuous = spec.continuous_usage

    def prepare(self, i: int, warmup: bool = False) -> Prepared:
        p = self.factory.make(i)
        body = build_body(
            self.spec.model,
            self.spec.endpoint,
            p.prompt,
            p.messages,
            p.output_tokens,
            ignore_eos=True,
            continuous_usage=self.continuous,
            temperature=self.spec.workload.temperature,
        )
        return Prepared(i, body, p.input_tokens, p.output_tokens, warmup)

    async def probe(self) -> None:
        """One 2-token request: a 4xx means bad input (model name…); a rejected
        ``continuous_usage_stats`` switches it off."""
        for continuous in (True, False) if self.spec.continuous_usage else (False,):
            self.continuous = continuous
            body = build_body(
                self.spec.model,
                self.spec.endpoint,
                "Hello",
                None,
                2,
                ignore_eos=True,
                continuous_usage=continuous,
            )
            rec = await send(
                self.transport,
                self.clock,
                self.url,
                Prepared(-1, body, None, 2, True),
                self.clock.now(),
                min(self.spec.timeout_s, 60.0),
            )
            if rec.failure == "connection_error":
                raise ServerUnreachable(f"cannot reach {self.url}: {rec.detail}")
            status = int(rec.failure[5:]) if rec.failure and rec.failure.startswith("http_") else 0
            if continuous and status in (400, 422) and "continuous_usage" in rec.detail:
                continue
            if 400 <= status < 500 and status != 429:
                raise LoadtestInputError(
                    f"the server at {self.url} rejected a test request for model "
                    f"{self.spec.model!r}: HTTP {status}: {rec.detail[:300]}"
                )
            return

    async def closed(
        self, n: int | None, duration_s: float | None, concurrency: int, first: int, warmup: bool
    ) -> list[RequestRecord]:
        counter = itertools.count(first)
        deadline = self.clock.now() + duration_s if duration_s is not None else None
        out: list[RequestRecord] = []

        async def worker() -> None:
            while True:
                i = next(counter)
                if (n is not None and i >= first + n) or (deadline is not None and self.clock.now() >= deadline):
                    return
                req = self.prepare(i, warmup)
                out.append(await send(self.transport, self.clock, self.url, req, self.clock.now(), self.spec.timeout_s))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return out

    def _offsets(self, rate: float) -> tuple[list[float], list[int] | None]:
        """The send schedule and its windows' first arrivals (loadtest.arrivals.window_starts): ``requests`` or
        ``duration_s``; with ``steady_e2e_multiple``, arrivals up to ``max_duration_s`` of which the level sends
        at least ``requests``."""
        s = self.spec
        window_s, next_s = rate_window_s(s, rate), next_rate_window_s(s)

        def plan(count: int | None, duration_s: float | None) -> tuple[list[float], list[int] | None]:
            offsets = arrivals.schedule(
                rate,
                count=count,
                duration_s=duration_s,
                arrival=s.arrival,
                burstiness=s.burstiness,
                seed=s.seed,
                rate_window_s=window_s,
                next_window_s=next_s,
            )
            starts = arrivals.window_starts(
                rate,
                count=count,
                duration_s=duration_s,
                arrival=s.arrival,
                rate_window_s=window_s,
                next_window_s=next_s,
            )
            return offsets, starts

        if s.steady_e2e_multiple is None or s.max_duration_s is None or s.requests is None:
            return plan(s.requests, s.duration_s)
        longest = plan(None, s.max_duration_s)
        return longest if len(longest[0]) >= s.requests else plan(s.requests, None)

    async def open(self, rate: float, first: int) -> list[RequestRecord]:
        s = self.spec
        offsets, window_starts = self._offsets(rate)
        tasks: list[asyncio.Task[RequestRecord]] = []
        sent: list[tuple[Prepared, float]] = []
        planned = s.requests if s.requests is not None else len(offsets)
        # lost only once the longest level it may become is lost: a steady-state level sends past ``planned``
        counter = MissCounter(s.slos, len(offsets)) if s.abandon_when_lost else None
        stop = LevelEnd(s.requests or len(offsets), s.steady_e2e_multiple, s.steady_soft_max_s, window_starts)
        lost = asyncio.Event()
        watch = InFlight(counter) if counter is not None and counter.first_token_limit_ms is not None else None

        def judge(task: asyncio.Task[RequestRecord]) -> None:
            if task.cancelled() or task.exception() is not None:
                return
            stop.add(task.result())
            if counter is not None and counter.add(task.result()):
                lost.set()

        ahead = max(16, math.ceil(rate * PREBUILD_AHEAD_S))
        before = min(planned, max(ahead, math.ceil(rate * PREBUILD_BEFORE_S)))
        with Prebuilt(lambda k: self.prepare(first + k), len(offsets), before, ahead) as requests:
            start = self.clock.now() + 0.005  # after the prebuild: building is not the server's time
            for k, off in enumerate(offsets):
                if lost.is_set() or stop.reached(k, off, start + off):
                    break
                req = await requests.get(k)
                t = start + off
                await self.clock.sleep_until(t)
                if watch is not None and watch.overdue(self.clock.now()):
                    lost.set()
                    break
                events: list[Chunk] = []
                task = asyncio.create_task(send(self.transport, self.clock, self.url, req, t, s.timeout_s, events))
                stop.sent(t)
                task.add_done_callback(judge)
                tasks.append(task)
                sent.append((req, t))
                if watch is not None:
                    watch.sent(req.index, t, events, task)
        if lost.is_set():
            for task in tasks:
                task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        return level_records(sent, results, counter.lost_slo if counter else None)

    async def execute(self) -> LoadReport:
        s = self.spec
        if s.probe:
            await self.probe()
        records: list[RequestRecord] = []
        if s.warmup:
            width = s.concurrency or max(1, math.ceil(s.rate or 1))
            records += await self.closed(s.warmup, None, min(width, s.warmup), 0, True)
        metrics_url = base_url(s.url) + "/metrics"
        scraper = Scraper(self.transport, metrics_url, clock=self.clock) if s.scrape_server_metrics else None
        before = await scraper.scrape() if scraper else None
        if scraper:
            scraper.start()
        host = HostCpuMeter() if s.measure_host_cpu else None
        if host:
            host.start()
        try:
            if s.rate is not None:
                records += await self.open(s.rate, s.warmup)
            else:
                assert s.concurrency is not None
                records += await self.closed(s.requests, s.duration_s, s.concurrency, s.warmup, False)
        finally:
            used = host.stop() if host else None
            if scraper:
                await scraper.stop()
        server = {}
        after = await scraper.scrape() if scraper and before else None
        if scraper and before and after:
            server = summarize(before[0], after[0], scraper.peaks, after[1])
        gauges = tuple(scraper.samples) if scraper else ()
        report = compute_metrics(records, slos=s.slos, server=server, gauges=gauges)
        return replace(report, host=used)


async def run_load_async(spec: LoadSpec, *, session: Transport | None = None, clock: Clock | None = None) -> LoadReport:
    """Run ``spec`` in the current event loop. ``session``: a Transport (default: aiohttp, no cap)."""
    clock = clock or MonotonicClock()
    transport: Transport
    own = session is None
    if own:
        _raise_fd_limit()
        transport = AiohttpTransport()
    else:
        assert session is not None
        transport = session
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()  # a cyclic-GC pause in the middle of a send or a read is latency we would measure
    try:
        return await _Run(spec, transport, clock).execute()
    finally:
        if gc_was_enabled:
            gc.enable()
        if own:
            await transport.aclose()  # type: ignore[attr-defined]


def run_load(spec: LoadSpec, *, session: Transport | None = None, clock: Clock | None = None) -> LoadReport:
    """Synchronous entry point (the tuner's): checks the server within 5 s, then runs one event loop
    (uvloop when installed, else ``asyncio.run``)."""
    if session is None:
        check_server(spec.url)
    coro = run_load_async(spec, session=session, clock=clock)
    try:
        import uvloop  # optional: ~40 % less client CPU per streamed request (bench/loadtest_accuracy.py)
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
