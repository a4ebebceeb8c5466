"""Parsing vLLM's /metrics text (format as vLLM 0.32 writes it) into the report's server dict."""

from __future__ import annotations

import pytest

from loadtest.server_metrics import ServerSummary, parse_prometheus, summarize

BEFORE = """# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 2.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 100.0
vllm:request_queue_time_seconds_sum{engine="0",model_name="m"} 1.0
vllm:request_queue_time_seconds_count{engine="0",model_name="m"} 10.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="m"} 0.2
vllm:request_prefill_time_seconds_count{engine="0",model_name="m"} 10.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.5
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 10.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 2.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 100.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 10.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",num_gpu_blocks="512"} 1.0
"""
AFTER = """vllm:num_preemptions_total{engine="0",model_name="m"} 5.0
vllm:num_preemptions_total{engine="1",model_name="m"} 1.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 3000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 600.0
vllm:request_queue_time_seconds_sum{engine="0",model_name="m"} 3.0
vllm:request_queue_time_seconds_count{engine="0",model_name="m"} 30.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="m"} 0.6
vllm:request_prefill_time_seconds_count{engine="0",model_name="m"} 30.0
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 400.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 300.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.5
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 30.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 8.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 300.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 30.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",num_gpu_blocks="512"} 1.0
"""


def test_summary_deltas_rates_and_peaks() -> None:
    b, _ = parse_prometheus(BEFORE)
    a, infos = parse_prometheus(AFTER)
    s = summarize(b, a, {"kv_cache_usage": 0.42}, infos)
    assert s["preemptions"] == 4  # summed over engines, minus the count before the run
    assert s["prefix_cache_hit_rate"] == pytest.approx(500 / 2000)
    assert s["queue_time_mean_ms"] == pytest.approx(100.0)
    assert s["prefill_time_mean_ms"] == pytest.approx(1000 * 0.4 / 20)
    assert "spec_decode_acceptance_rate" not in s  # absent before the run: no delta
    assert s["kv_cache_usage_peak"] == 0.42 and s["kv_cache_tokens"] == 512 * 16
    assert s["server_requests"] == 20
    assert s["server_ttft_mean_ms"] == pytest.approx(1000 * 1.0 / 20) and s["server_itl_mean_ms"] == pytest.approx(30.0)


def test_spec_decode_acceptance() -> None:
    a, _ = parse_prometheus(AFTER)
    s = summarize(
        {
            **a,
            "vllm:spec_decode_num_draft_tokens_total": 0.0,
            "vllm:spec_decode_num_accepted_tokens_total": 0.0,
            "vllm:spec_decode_num_drafts_total": 0.0,
        },
        a,
        {},
        {},
    )
    assert s["spec_decode_acceptance_rate"] == pytest.approx(0.75)
    assert s["spec_decode_mean_accepted_per_draft"] == pytest.approx(3.0)
    assert s["spec_decode_drafts"] == 100


def test_a_speculating_server_that_drafted_nothing_says_so() -> None:
    a, _ = parse_prometheus(AFTER)
    s = summarize(a, a, {}, {})  # counters present, no change over the run
    assert s["spec_decode_drafts"] == 0 and "spec_decode_acceptance_rate" not in s
    b, _ = parse_prometheus(BEFORE)
    assert "spec_decode_drafts" not in summarize(b, b, {}, {})  # not speculating: no such counter


def test_scraped_through_the_run_with_lines_without_newlines() -> None:
    from loadtest.lengths import LengthDist
    from loadtest.runner import LoadSpec, run_load
    from loadtest.testing import FakeResponse, FakeTransport, ScriptedClock
    from loadtest.workload import Workload

    clock = ScriptedClock()
    scrapes = iter([BEFORE, AFTER, AFTER, AFTER, AFTER, AFTER])

    def handler(req):  # type: ignore[no-untyped-def]
        if req.method == "GET":
            return FakeResponse(200, [(0.0, line.encode()) for line in next(scrapes).splitlines()], clock)
        return FakeResponse.stream(clock, [(0.1, 1), (0.01, 1)])

    wl = Workload("t", LengthDist("fixed", 4, 4), LengthDist("fixed", 2, 2))
    spec = LoadSpec(url="http://fake:1", model="m", workload=wl, concurrency=1, requests=2, probe=False)
    r = run_load(spec, session=FakeTransport(handler, clock), clock=clock)
    assert r.server["preemptions"] == 4 and r.server["prefix_cache_hit_rate"] == pytest.approx(0.25)


def test_non_vllm_server_gives_empty_server_dict() -> None:
    from loadtest.lengths import LengthDist
    from loadtest.runner import LoadSpec, run_load
    from loadtest.testing import FakeResponse, FakeTransport, ScriptedClock
    from loadtest.workload import Workload

    clock = ScriptedClock()

    def handler(req):  # type: ignore[no-untyped-def]
        if req.method == "GET":
            return FakeResponse(404, [(0.0, b"not found")], clock)
        return FakeResponse.stream(clock, [(0.1, 1), (0.01, 1)])

    wl = Workload("t", LengthDist("fixed", 4, 4), LengthDist("fixed", 2, 2))
    spec = LoadSpec(url="http://fake:1", model="m", workload=wl, concurrency=1, requests=2, probe=False)
    t = FakeTransport(handler, clock)
    r = run_load(spec, session=t, clock=clock)
    assert r.server == {} and r.requests_ok == 2
    assert sum(1 for q in t.requests if q.method == "GET") == 1  # gave up after the first 404


def test_scraper_keeps_the_peak_of_each_gauge_over_its_scrapes() -> None:
    import asyncio

    from loadtest.server_metrics import Scraper
    from loadtest.testing import FakeResponse, FakeTransport, ScriptedClock

    clock = ScriptedClock()
    texts = iter(
        [
            f'vllm:num_requests_running{{engine="0",model_name="m"}} {n}\n'
            f'vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {u}\n'
            for n, u in ((0, 0.0), (3, 0.2), (1, 0.5), (0, 0.1))
        ]
    )

    def handler(req):  # type: ignore[no-untyped-def]
        return FakeResponse(200, [(0.0, line.encode()) for line in next(texts).splitlines()], clock)

    scraper = Scraper(FakeTransport(handler, clock), "http://fake:1/metrics")

    async def four() -> None:
        for _ in range(4):
            await scraper.scrape()

    asyncio.run(four())
    assert scraper.peaks["requests_running"] == 3.0 and scraper.peaks["kv_cache_usage"] == 0.5


def test_scraper_keeps_each_polls_running_and_waiting_at_the_runs_clock() -> None:
    import asyncio

    from loadtest.server_metrics import GaugeSample, Scraper
    from loadtest.testing import FakeResponse, FakeTransport, ScriptedClock

    clock = ScriptedClock()
    texts = iter(
        [
            f'vllm:num_requests_running{{engine="0"}} {r}\nvllm:num_requests_waiting{{engine="0"}} {w}\n'
            for r, w in ((2, 0), (7, 3))
        ]
        + ["vllm:num_requests_running 1\n"]  # no waiting gauge: not a sample
    )

    def handler(req):  # type: ignore[no-untyped-def]
        return FakeResponse(200, [(0.0, line.encode()) for line in next(texts).splitlines()], clock)

    scraper = Scraper(FakeTransport(handler, clock), "http://fake:1/metrics", clock=clock)

    async def polls() -> None:
        for _ in range(3):
            await scraper.scrape()
            await clock.sleep_until(clock.now() + 0.2)

    asyncio.run(polls())
    assert [(s.running, s.waiting) for s in scraper.samples] == [(2.0, 0.0), (7.0, 3.0)]
    assert isinstance(scraper.samples[0], GaugeSample)
    assert scraper.samples[1].t - scraper.samples[0].t == pytest.approx(0.2)


def test_ttft_outside_the_engine_is_what_its_queue_and_prefill_leave() -> None:
    b, _ = parse_prometheus(BEFORE)
    a, infos = parse_prometheus(AFTER)
    server = ServerSummary.from_dict(summarize(b, a, {}, infos))
    # TTFT 50 ms from the API server's arrival, of which 100 ms queue and 20 ms prefill: the means' request sets
    # differ (first token vs end), and the difference says so rather than being clipped
    assert server.outside_engine_ttft_ms == pytest.approx(50.0 - 100.0 - 20.0)
    assert ServerSummary(server_ttft_mean_ms=300.0, queue_time_mean_ms=40.0).outside_engine_ttft_ms is None
    assert ServerSummary(
        server_ttft_mean_ms=300.0, queue_time_mean_ms=40.0, prefill_time_mean_ms=60.0
    ).outside_engine_ttft_ms == pytest.approx(200.0)
