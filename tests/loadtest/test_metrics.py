"""The pure metrics function on hand-made records (every timestamp known)."""

from __future__ import annotations

import math

import pytest

from loadtest.metrics import chunk_tokens, compute_metrics, timings
from loadtest.records import Chunk, RequestRecord
from loadtest.report import percentile
from loadtest.slo import parse_slos


def rec(
    i: int,
    sched: float,
    sent: float,
    chunks: list[tuple[float, int | None]],
    done: float,
    tokens: int | None = None,
    failure: str | None = None,
    warmup: bool = False,
) -> RequestRecord:
    cs = tuple(Chunk(t, k) for t, k in chunks)
    total = tokens if tokens is not None else sum(k or 0 for _, k in chunks)
    return RequestRecord(
        i,
        sched,
        sent,
        cs,
        done,
        prompt_tokens=10,
        completion_tokens=None if failure else total,
        failure=failure,
        warmup=warmup,
    )


def test_ttft_from_scheduled_time_and_lag_reported_apart() -> None:
    r = rec(0, 10.0, 10.004, [(10.1, 1), (10.12, 1), (10.15, 1)], 10.15)
    t = timings(r)
    assert t.ttft == pytest.approx(100.0)  # from the scheduled 10.0, not the late send at 10.004
    rep = compute_metrics([r])
    assert rep.schedule_lag_ms.p50 == pytest.approx(4.0)


def test_multi_token_chunks_count_tokens_not_chunks() -> None:
    # 3 events carrying 1 + 4 + 3 tokens (speculative decoding): 8 tokens, not 3
    r = rec(0, 0.0, 0.0, [(0.2, 1), (0.3, 4), (0.5, 3)], 0.5)
    t = timings(r)
    assert t.tokens == 8
    assert t.tpot == pytest.approx((500 - 200) / 7)
    assert len(t.itl) == 7
    assert t.itl[:4] == pytest.approx([25.0] * 4) and t.itl[4:] == pytest.approx([200 / 3] * 3)
    assert math.fsum(t.itl) == pytest.approx(t.e2e - t.ttft)


def test_first_event_with_several_tokens_gives_zero_gaps() -> None:
    t = timings(rec(0, 0.0, 0.0, [(0.1, 3), (0.2, 1)], 0.2))
    assert t.itl == pytest.approx((0.0, 0.0, 100.0))
    assert t.tpot == pytest.approx(100 / 3)


def test_without_running_usage_the_total_is_spread_over_events() -> None:
    r = rec(0, 0.0, 0.0, [(0.1, None), (0.2, None), (0.4, None)], 0.4, tokens=7)
    toks, exact = chunk_tokens(r)
    assert toks == [1, 3, 3] and not exact
    t = timings(r)
    assert t.tokens == 7 and math.fsum(t.itl) == pytest.approx(300.0)
    assert not compute_metrics([r]).token_counts_exact


def test_failures_warmup_and_throughput() -> None:
    ok = [rec(i, float(i), float(i), [(i + 0.1, 1), (i + 0.2, 1)], i + 0.2) for i in range(4)]
    bad = rec(4, 4.0, 4.0, [], 4.5, failure="http_500")
    warm = rec(-1, -5.0, -5.0, [(-4.0, 1)], -4.0, warmup=True)
    r = compute_metrics([warm, *ok, bad])
    assert (r.requests_ok, r.requests_failed, r.failures) == (4, 1, {"http_500": 1})
    assert r.duration_s == pytest.approx(4.5)  # first scheduled (0.0) to last end (4.5); warmup ignored
    assert r.output_tokens == 8
    assert r.throughput_req_s == pytest.approx(4 / 4.5)
    assert r.ttft_ms.p99 == pytest.approx(100.0)


def test_goodput_and_slo_values_count_failures_as_misses() -> None:
    recs = [
        rec(i, 0.0, 0.0, [(0.125 * (i + 1), 1), (0.125 * (i + 1) + 0.015625, 1)], 0.125 * (i + 1) + 0.015625)
        for i in range(10)
    ]  # TTFT 125, 250, ..., 1250 ms
    slos = parse_slos("ttft_p50=750ms,tpot_p90=20ms")
    r = compute_metrics(recs, slos=slos)
    assert r.requests_good == 6  # TTFT <= 750 ms
    assert r.goodput_req_s == pytest.approx(6 / r.duration_s)
    assert r.slo_values["ttft_p50"] == pytest.approx(687.5)
    assert r.slo_met is True
    failed = [rec(10 + i, 0.0, 0.0, [], 1.0, failure="timeout") for i in range(10)]
    r2 = compute_metrics(recs + failed, slos=slos)
    assert r2.slo_values["ttft_p50"] is None  # the median request failed
    assert r2.slo_met is False and r2.requests_good == 6


def test_itl_slo_per_request_uses_its_own_percentile() -> None:
    smooth = rec(0, 0.0, 0.0, [(0.1, 1)] + [(0.1 + 0.01 * k, 1) for k in range(1, 21)], 0.3)
    spiky = rec(1, 0.0, 0.0, [(0.1, 1)] + [(0.1 + 0.01 * k + (0.5 if k > 10 else 0), 1) for k in range(1, 21)], 0.8)
    r = compute_metrics([smooth, spiky], slos=parse_slos("itl_p50=15ms"))
    assert r.requests_good == 2  # each request's own p50 gap is 10 ms
    r = compute_metrics([smooth, spiky], slos=parse_slos("itl_p99=15ms"))
    assert r.requests_good == 1  # the spiky one has a 510 ms gap


def test_value_gives_any_percentile() -> None:
    recs = [rec(i, 0.0, 0.0, [((i + 1) / 1000, 1)], (i + 1) / 1000) for i in range(1000)]
    r = compute_metrics(recs)
    assert r.value("ttft", 99.9) == pytest.approx(999.001)
    assert r.value("ttft", 50) == pytest.approx(r.ttft_ms.p50)
    assert r.tpot_ms.p50 is None  # one-token answers have no TPOT
    with pytest.raises(ValueError, match="unknown metric"):
        r.value("latency", 50)


def test_no_success_gives_none_dists_and_json() -> None:
    r = compute_metrics([rec(0, 0.0, 0.0, [], 1.0, failure="connection_error")])
    d = r.to_dict()
    assert d["ttft_ms"] == {"mean": None, "p50": None, "p90": None, "p95": None, "p99": None}
    assert d["requests_failed"] == 1 and d["throughput_req_s"] == 0.0


def test_percentile_matches_linear_interpolation() -> None:
    vals = [1.0, 2.0, 3.0, 4.0]
    assert percentile(vals, 50) == 2.5 and percentile(vals, 0) == 1.0 and percentile(vals, 100) == 4.0
    assert percentile([1.0, math.inf], 60) == math.inf and percentile([], 50) is None


@pytest.mark.parametrize("pct", [50.0, 90.0, 95.0, 99.0, 99.9])
def test_a_level_is_abandoned_exactly_when_its_percentile_can_no_longer_hold(pct: float) -> None:
    # The abandon rule must agree with the percentile the level is judged on (linear interpolation):
    # with `allowed` misses some outcome still meets the limit, with one more none does.
    from loadtest.abandon import allowed_misses
    from loadtest.report import percentile

    limit = 1.0
    for n in range(1, 600):
        m = allowed_misses(n, pct)
        assert 0 <= m < n
        best_case = sorted([0.0] * (n - m) + [limit * (1 + 1e-9)] * m)  # the others as fast as can be
        assert percentile(best_case, pct) <= limit, (n, m)
        over = sorted([0.0] * (n - m - 1) + [limit * (1 + 1e-9)] * (m + 1))
        assert percentile(over, pct) > limit, (n, m + 1)


def test_the_text_report_says_when_the_generator_itself_fell_behind() -> None:
    from loadtest.report import format_table

    on_time = compute_metrics([rec(0, 10.0, 10.004, [(10.1, 1), (10.12, 1)], 10.12)])
    late = compute_metrics([rec(0, 10.0, 10.3, [(10.4, 1), (10.42, 1)], 10.42)])
    assert "fell behind its schedule" not in format_table(on_time)
    assert "fell behind its schedule: p95 300 ms" in format_table(late)


def test_a_run_answered_from_the_prefix_cache_is_flagged_beyond_the_workloads_shared_prefix() -> None:
    from loadtest.report import cached_prompts_note

    def hit(rate: float):  # type: ignore[no-untyped-def]
        return compute_metrics([rec(0, 10.0, 10.0, [(10.1, 1)], 10.1)], server={"prefix_cache_hit_rate": rate})

    note = cached_prompts_note(hit(0.83), 0.0, 11)
    assert note is not None and "83% of prompt tokens" in note and "--seed 11" in note
    assert cached_prompts_note(hit(0.2), 0.0, 11) is None  # a chat template's shared system prompt, say
    assert cached_prompts_note(hit(0.83), 0.7, 11) is None  # the workload shares 70 % on purpose
    assert cached_prompts_note(compute_metrics([rec(0, 10.0, 10.0, [(10.1, 1)], 10.1)]), 0.0, 11) is None


def _queue(rate: float, service: float, latency: float, stop: float, seed: int = 3) -> list[RequestRecord]:
    """Poisson arrivals at ``rate`` into one FIFO server answering ``service`` requests/s after ``latency`` s;
    at ``stop`` the run is abandoned (answers not done by then are cancelled, as loadtest.abandon records)."""
    import random

    rng, t, free, out = random.Random(seed), 0.0, 0.0, []
    while (t := t + rng.expovariate(rate)) < stop:
        free = max(t + latency, free + 1.0 / service)
        done = free <= stop
        out.append(rec(len(out), t, t, [(free, 5)] if done else [], free if done else t,
                       failure=None if done else "abandoned"))  # fmt: skip
    return out


def test_sustained_rate_is_what_an_overloaded_server_answered_while_arrivals_lasted() -> None:
    from loadtest.metrics import sustained_rate

    lost = _queue(rate=20.0, service=12.0, latency=2.0, stop=18.0)  # a soak lost after 18 s
    assert compute_metrics(lost).throughput_req_s < 11.0  # the 2 s before the first answer dilute it
    assert sustained_rate(lost) == pytest.approx(12.0, rel=0.03)
    kept_up = _queue(rate=5.0, service=12.0, latency=2.0, stop=60.0)
    assert sustained_rate(kept_up) == pytest.approx(5.0, rel=0.15)  # below capacity: the arrival rate
    assert sustained_rate(kept_up[:9]) == 0.0  # too few answers to tell


def test_sustained_rate_of_a_growing_batch_is_what_it_streamed_not_what_it_completed() -> None:
    """7 req/s into a batch of at most 5.2 req/s (50 ms a step plus 3 ms a sequence, 64 tokens each, one token per
    step): few requests complete within the minute, the tokens stream at the batch's full speed."""
    from loadtest.metrics import sustained_rate
    from tests.loadtest.batching import batched_decoding

    out, _ = batched_decoding(7.0, 60.0, seed=4)
    completed_by_end = sum(1 for r in out if r.done_at is not None and r.done_at <= 60.0)
    assert completed_by_end / 60.0 < 3.0  # what completions alone would say
    # a batch of N streams N / (0.05 + 0.003 N) tokens/s: 4.1 req/s at 100 running, 4.7 at 200, 5.2 at the most
    assert 4.0 < sustained_rate(out) < 1 / (0.003 * 64)


def test_sustained_rate_of_long_lived_requests_is_not_read_while_the_batch_fills() -> None:
    """2 req/s of 400-token requests living ~24 s, well within the batch's speed, for 100 s of arrivals: over the
    first lifetime the batch streams for fewer requests than it will hold, so counted from the first answer the
    tokens streamed say ~12 % less than the rate the server kept up with."""
    from loadtest.metrics import sustained_rate
    from tests.loadtest.batching import batched_decoding

    out, _ = batched_decoding(2.0, 100.0, seed=5, step_s=0.05, per_seq_s=0.0002, tokens=400)
    arrived = len(out) / max(r.scheduled_at for r in out)  # the rate this draw of arrivals really had
    assert sum(r.done_at - r.scheduled_at for r in out) / len(out) > 20.0  # the lifetime the test is about
    assert sustained_rate(out) == pytest.approx(arrived, rel=0.06)
    short = [r for r in out if r.scheduled_at < 40.0]  # under two lifetimes of arrivals: read from the first answer
    assert sustained_rate(short) < 0.9 * len(short) / 40.0


def test_a_miss_counted_in_flight_is_not_counted_again_when_its_request_ends() -> None:
    from loadtest.abandon import MissCounter
    from loadtest.records import Chunk, RequestRecord
    from loadtest.slo import parse_slos

    counter = MissCounter(parse_slos("ttft_p95=1s,e2e_p95=3s"), 20)  # 20 requests: 1 may miss
    assert counter.first_token_limit_ms == 1000.0
    assert not counter.overdue(7, 900.0) and counter.misses == {"ttft_p95": 0, "e2e_p95": 0}
    assert not counter.overdue(7, 1200.0) and not counter.overdue(7, 1500.0)  # once per request
    late = RequestRecord(index=7, scheduled_at=0.0, sent_at=0.0, chunks=(Chunk(2.0, 1), Chunk(4.0, 1)), done_at=4.0)
    assert not counter.add(late) and counter.misses == {"ttft_p95": 1, "e2e_p95": 1}  # its E2E miss counts at its end
    assert counter.overdue(8, 1100.0) and counter.lost_slo == "ttft_p95"


def test_the_realized_sending_rate_is_reported_and_stored() -> None:
    """A Poisson schedule's count in a window varies: the report says at what rate it really sent."""
    from loadtest.arrivals import schedule
    from loadtest.summary import ReportSummary

    offsets = schedule(2.48, duration_s=180.0, seed=41)  # 479 arrivals in 180 s: 7 % above the nominal rate
    recs = [rec(i, t, t, [(t + 0.1, 1)], t + 0.2) for i, t in enumerate(offsets)]
    warm = rec(-1, -50.0, -50.0, [(-49.9, 1)], -49.8, warmup=True)  # warm-up requests are not the load
    rep = compute_metrics([warm, *recs])
    assert rep.sent_rate_req_s == pytest.approx((len(offsets) - 1) / offsets[-1])
    assert 2.6 < rep.sent_rate_req_s < 2.7
    assert ReportSummary.from_dict(rep.summary().to_dict()).sent_rate_req_s == rep.sent_rate_req_s
    assert compute_metrics(recs[:1]).sent_rate_req_s is None  # one request: no span
