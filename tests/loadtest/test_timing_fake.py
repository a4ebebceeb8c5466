"""The load generator's own timing, with a scripted clock and a fake server (no socket, no sleep)."""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace

import pytest

from loadtest.errors import LoadtestInputError, ServerUnreachable
from loadtest.lengths import LengthDist
from loadtest.runner import LoadSpec, run_load
from loadtest.testing import FakeRequest, FakeResponse, FakeTransport, ScriptedClock
from loadtest.workload import Workload

WL = Workload("t", LengthDist("fixed", 16, 16), LengthDist("fixed", 4, 4))


def spec(**kw: object) -> LoadSpec:
    base: dict[str, object] = dict(
        url="http://fake:1",
        model="m",
        workload=WL,
        concurrency=1,
        requests=3,
        scrape_server_metrics=False,
        probe=False,
    )
    base.update(kw)
    return LoadSpec(**base)  # type: ignore[arg-type]


def run(handler, **kw: object):  # type: ignore[no-untyped-def]
    clock = ScriptedClock()
    transport = FakeTransport(lambda req: handler(req, clock), clock)
    return run_load(spec(**kw), session=transport, clock=clock), transport


def test_e2e_minus_ttft_equals_sum_of_itl() -> None:
    events = [(0.120, 1), (0.010, 1), (0.030, 3), (0.005, 1)]  # 6 tokens in 4 events
    r, _ = run(lambda req, c: FakeResponse.stream(c, events))
    rec = r.records[0]
    ttft = (rec.chunks[0].t - rec.scheduled_at) * 1000
    e2e = (rec.done_at - rec.scheduled_at) * 1000
    assert ttft == pytest.approx(120.0)
    assert e2e == pytest.approx(165.0)
    assert r.ttft_ms.p50 == pytest.approx(120.0) and r.e2e_ms.p50 == pytest.approx(165.0)
    assert r.tpot_ms.p50 == pytest.approx(45.0 / 5)
    per_req_itl = r.samples["itl"]
    assert len(per_req_itl) == 3 * 5
    assert math.fsum(per_req_itl) / 3 == pytest.approx(e2e - ttft)
    assert r.output_tokens == 18 and r.token_counts_exact


def test_usage_after_last_token_counts_in_e2e_not_itl() -> None:
    r, _ = run(lambda req, c: FakeResponse.stream(c, [(0.1, 1), (0.02, 1)], tail_delay=0.05), requests=1)
    assert r.e2e_ms.p50 == pytest.approx(170.0)
    assert r.itl_ms.p50 == pytest.approx(20.0)
    assert r.tpot_ms.p50 == pytest.approx(70.0)  # (E2E - TTFT) / (tokens - 1), as defined


def test_open_loop_ttft_counts_from_schedule() -> None:
    r, t = run(
        lambda req, c: FakeResponse.stream(c, [(0.05, 1), (0.01, 1)]),
        concurrency=None,
        rate=10.0,
        requests=5,
        arrival="constant",
    )
    scheds = [rec.scheduled_at for rec in r.records]
    assert [b - a for a, b in zip(scheds, scheds[1:], strict=False)] == pytest.approx([0.1] * 4)
    assert r.requests_ok == 5 and len(t.requests) == 5


def test_without_continuous_usage_tokens_come_from_final_usage() -> None:
    r, _ = run(lambda req, c: FakeResponse.stream(c, [(0.1, 1), (0.02, 2), (0.02, 2)], continuous_usage=False))
    assert r.output_tokens == 15 and not r.token_counts_exact
    assert r.tpot_ms.p50 == pytest.approx(40.0 / 4)


def test_continuous_usage_off_is_never_asked_for_and_counts_are_spread() -> None:
    def strict(req: FakeRequest, c: ScriptedClock) -> FakeResponse:
        assert "continuous_usage_stats" not in req.body["stream_options"], req.body
        return FakeResponse.stream(c, [(0.1, 1), (0.02, 2), (0.02, 2)], continuous_usage=False)

    r, t = run(strict, continuous_usage=False, probe=True)
    assert r.requests_ok == 3 and len(t.requests) == 1 + 3  # one probe, no retry with the option
    assert r.output_tokens == 15 and not r.token_counts_exact


def test_chat_stream_is_parsed() -> None:
    r, t = run(lambda req, c: FakeResponse.stream(c, [(0.1, 1), (0.02, 1)], chat=True), endpoint="chat")
    assert r.requests_ok == 3 and t.requests[0].url == "http://fake:1/v1/chat/completions"
    body = t.requests[0].body
    assert body["messages"][-1]["role"] == "user" and body["max_tokens"] == 4 and body["ignore_eos"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda c: FakeResponse(500, [(0.0, b"boom")], c), "http_500"),
        (
            lambda c: FakeResponse.stream(c, [(0.1, 1), (0.02, 1)], final_usage=False, done=False),
            "stream_cut",
        ),
        (lambda c: FakeResponse(200, [(0.1, b"data: {not json\n")], c), "malformed_chunk"),
        (lambda c: FakeResponse(200, [(0.1, b'data: {"error": {"message": "x"}}\n')], c), "server_error"),
        (lambda c: FakeResponse(200, [(0.1, b'data: {"id": 1}\n')], c), "malformed_chunk"),
        (lambda c: FakeResponse(200, [(0.1, b"data: [1, 2]\n")], c), "malformed_chunk"),
        (lambda c: FakeResponse.stream(c, [(0.1, 1)], final_usage=False, continuous_usage=False), "no_usage"),
        (lambda c: FakeResponse.stream(c, [], final_usage=True), "no_output"),
        (
            lambda c: FakeResponse(
                200, FakeResponse.stream(c, [(0.1, 1)]).lines_[:2], c, error=ConnectionResetError("reset")
            ),
            "stream_cut",
        ),
    ],
)
def test_failures_are_counted_by_reason(make, reason: str) -> None:  # type: ignore[no-untyped-def]
    r, _ = run(lambda req, c: make(c), requests=2)
    assert r.requests_ok == 0 and r.failures == {reason: 2}
    assert all(rec.failure == reason for rec in r.records)


def test_connection_refused_is_a_failure_not_a_crash() -> None:
    def refuse(req: FakeRequest, c: ScriptedClock) -> FakeResponse:
        raise ConnectionRefusedError("refused")

    r, _ = run(refuse, requests=2)
    assert r.failures == {"connection_error": 2}


def test_mixed_success_and_failure() -> None:
    calls = iter(range(100))

    def flaky(req: FakeRequest, c: ScriptedClock) -> FakeResponse:
        if next(calls) % 2:
            return FakeResponse(503, [(0.0, b"busy")], c)
        return FakeResponse.stream(c, [(0.1, 1), (0.01, 1)])

    r, _ = run(flaky, requests=6)
    assert r.requests_ok == 3 and r.failures == {"http_503": 3}


def test_probe_falls_back_without_continuous_usage_and_rejects_bad_model() -> None:
    def strict(req: FakeRequest, c: ScriptedClock) -> FakeResponse:
        if "continuous_usage_stats" in req.body["stream_options"]:
            return FakeResponse(400, [(0.0, b'{"error": "unknown field continuous_usage_stats"}')], c)
        return FakeResponse.stream(c, [(0.1, 1), (0.01, 1)], continuous_usage=False)

    r, t = run(strict, probe=True)
    assert r.requests_ok == 3 and len(t.requests) == 2 + 3
    assert "continuous_usage_stats" not in t.requests[-1].body["stream_options"]

    with pytest.raises(LoadtestInputError, match="HTTP 404"):
        run(lambda req, c: FakeResponse(404, [(0.0, b"The model `m` does not exist.")], c), probe=True)

    def down(req: FakeRequest, c: ScriptedClock) -> FakeResponse:
        raise ConnectionRefusedError("refused")

    with pytest.raises(ServerUnreachable):
        run(down, probe=True)


def test_seed_reproduces_prompts_and_schedule() -> None:
    def go(seed: int):  # type: ignore[no-untyped-def]
        r, t = run(
            lambda req, c: FakeResponse.stream(c, [(0.1, 1)]),
            concurrency=None,
            rate=50.0,
            requests=6,
            seed=seed,
        )
        start = r.records[0].scheduled_at
        return [b.body["prompt"] for b in t.requests], [rec.scheduled_at - start for rec in r.records]

    a, b, c = go(1), go(1), go(2)
    assert a == b
    assert a[0] != c[0] and a[1] != c[1]
    assert len(set(a[0])) == 6  # every prompt differs


def test_warmup_is_excluded() -> None:
    r, t = run(lambda req, c: FakeResponse.stream(c, [(0.1, 1), (0.01, 1)]), warmup=2, requests=3)
    assert len(t.requests) == 5 and r.requests_ok == 3
    assert [rec.warmup for rec in r.records] == [True, True, False, False, False]


def test_duration_mode_closed_loop_stops_sending() -> None:
    r, _ = run(lambda req, c: FakeResponse.stream(c, [(0.1, 1), (0.1, 1)]), requests=None, duration_s=1.0)
    assert r.requests_ok == 5  # 0.2 s each, one at a time, for 1 s


class _Hanging(FakeResponse):
    async def lines(self):  # type: ignore[no-untyped-def, override]
        yield b'data: {"choices": [{"index": 0, "text": "a"}], "usage": {"completion_tokens": 1}}\n'
        await asyncio.sleep(10)  # real time: the request's own timeout must end it
        yield b"data: [DONE]\n"


def test_timeout_is_a_failure_reason() -> None:
    r, _ = run(lambda req, c: _Hanging(200, (), c), requests=2, timeout_s=0.05)
    assert r.failures == {"timeout": 2} and r.requests_ok == 0
    assert all(len(rec.chunks) == 1 for rec in r.records)  # what arrived before the timeout is kept


def test_open_loop_abandons_a_level_once_its_slo_is_lost() -> None:
    from loadtest.slo import parse_slos

    slow = lambda req, c: FakeResponse.stream(c, [(3.0, 1), (0.01, 1)])  # noqa: E731 - TTFT 3 s every time
    kw = dict(concurrency=None, rate=10.0, requests=100, arrival="constant", slos=parse_slos("ttft_p95=1s"))
    full, t_full = run(slow, **kw)
    cut, t_cut = run(slow, abandon_when_lost=True, **kw)
    assert len(t_full.requests) == 100 and full.requests_failed == 0 and full.slo_met is False
    assert len(t_cut.requests) < 100 and cut.slo_met is False  # stopped sending once > 5 of 100 missed
    assert cut.failures.get("abandoned", 0) + cut.requests_ok == len(cut.records)


def test_abandon_never_cuts_a_level_that_holds() -> None:
    from loadtest.slo import parse_slos

    fast = lambda req, c: FakeResponse.stream(c, [(0.05, 1), (0.01, 1)])  # noqa: E731
    r, t = run(
        fast,
        concurrency=None,
        rate=10.0,
        requests=50,
        arrival="constant",
        slos=parse_slos("ttft_p95=1s"),
        abandon_when_lost=True,
    )
    assert len(t.requests) == 50 and r.slo_met is True and r.requests_failed == 0


def test_a_steady_level_is_abandoned_only_once_its_longest_schedule_is_lost() -> None:
    """A steady-state level may send past its planned count, so misses are counted against the most it may send:
    3 failed requests (misses) out of a planned 20 (1 may miss) do not end a level that may send 100 (4 may)."""
    from loadtest.slo import parse_slos

    sent = iter(range(1000))

    def first_three_fail(req, c):  # type: ignore[no-untyped-def]
        if next(sent) < 3:
            return FakeResponse(500, ((0.0, b"overloaded"),), c)
        return FakeResponse.stream(c, [(0.05, 1), (0.01, 1)])

    steady = dict(concurrency=None, rate=10.0, requests=20, arrival="constant", slos=parse_slos("ttft_p95=1s"))
    steady.update(steady_e2e_multiple=10.0, max_duration_s=10.0, abandon_when_lost=True)
    r, t = run(first_three_fail, **steady)
    assert "abandoned" not in r.failures and r.requests_failed == 3 and len(t.requests) >= 20
    failing = lambda req, c: FakeResponse(500, ((0.0, b"overloaded"),), c)  # noqa: E731
    cut, t_cut = run(failing, **steady)
    assert len(t_cut.requests) < 20 and cut.slo_met is False  # stopped sending once 6 had missed


class _StreamsFirstClock(ScriptedClock):
    """A scripted clock that lets the requests already sent read their streams (each line advancing it by its
    delay) before it moves on to the next send: each request then lives exactly its stream's delays."""

    async def sleep_until(self, t: float) -> None:
        for _ in range(20):
            await asyncio.sleep(0)
        await super().sleep_until(t)


def steady_level(requests: int, multiple: float, max_duration_s: float) -> tuple[int, float]:
    """A steady level at 2.345 req/s whose requests each stream for 0.1 s (a few live longer, sent late behind
    one another): how many it sends, and the mean lifetime of its requests."""
    clock = _StreamsFirstClock()
    transport = FakeTransport(lambda req: FakeResponse.stream(clock, [(0.1, 1)]), clock)
    s = spec(concurrency=None, rate=2.345, requests=requests, seed=62, measure_host_cpu=False)
    s = replace(s, steady_e2e_multiple=multiple, max_duration_s=max_duration_s)
    r = run_load(s, session=transport, clock=clock)
    lives = [rec.done_at - rec.scheduled_at for rec in r.records if rec.done_at is not None]
    assert len(lives) == len(transport.requests)
    return len(transport.requests), math.fsum(lives) / len(lives)


@pytest.mark.parametrize(("multiple", "windows"), [(1000.0, 0), (1250.0, 1), (1450.0, 2)])
def test_a_soak_past_its_span_sends_whole_30_s_windows_at_the_rate_it_names(multiple: float, windows: int) -> None:
    """A 120-s soak (281 requests at 2.345 req/s) that must last longer stops at the first window start past that:
    its span, then whole windows of round(2.345 x 30) = 70 arrivals, each sent at exactly the nominal rate."""
    from loadtest.arrivals import schedule

    sent, lifetime = steady_level(281, multiple, 240.0)
    assert sent == 281 + windows * 70
    offsets = schedule(2.345, duration_s=240.0, seed=62, rate_window_s=281 / 2.345, next_window_s=30.0)
    if windows:  # it went on past its span, to the first window start past its lifetimes (~144, ~166 s)
        assert offsets[sent - 70] < multiple * lifetime <= offsets[sent]
    assert sent / offsets[sent] == pytest.approx(2.345, rel=1e-9)  # the sends span sent / rate: the rate it names


def test_a_steady_level_shorter_than_a_window_ends_at_the_first_arrival_past_its_lifetimes() -> None:
    """A level of 20 planned requests (8.5 s) that must last 150 lifetimes of at least 0.1 s lies within its first
    30-s window (70 arrivals): it ends inside that window once it has lasted them, not at the window's end."""
    from loadtest.arrivals import schedule

    offsets = schedule(2.345, duration_s=120.0, seed=62, rate_window_s=30.0, next_window_s=30.0)
    sent, _ = steady_level(20, 150.0, 120.0)
    assert 20 < sent < 70 and offsets[sent] >= 15.0


class _Silent(FakeResponse):
    async def lines(self):  # type: ignore[no-untyped-def, override]
        await asyncio.sleep(10)  # real time: no first token while the level is sent
        yield b"data: [DONE]\n"


def test_a_request_with_no_first_token_past_the_limit_counts_as_a_miss_before_it_ends() -> None:
    from loadtest.slo import parse_slos

    kw = dict(concurrency=None, rate=10.0, requests=50, arrival="constant", slos=parse_slos("ttft_p95=1s"))
    r, t = run(lambda req, c: _Silent(200, (), c), abandon_when_lost=True, timeout_s=2.0, **kw)
    # at 0.1 s apart, each send finds one more request 1 s old with no token: 4 of them lose the p95 of 50 (3 may miss)
    assert len(t.requests) < 20 and r.failures.get("abandoned", 0) == len(t.requests)
