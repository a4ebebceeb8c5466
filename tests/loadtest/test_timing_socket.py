"""The load generator's timing over a real loopback socket, against bench/loadtest_fake_server.py: a server in
its own process with known delays that stamps when it read each request and wrote each token, on the same
CLOCK_MONOTONIC the client reads. What the client measured is compared with what the server did, request by
request; the bounds and the figures measured on the 2-core machine are in docs/loadtest.md ("Timing over a
socket"). A few seconds: 160 requests at 40 req/s (Poisson), 8 tokens each."""

from __future__ import annotations

import json
import multiprocessing as mp
import statistics
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from bench.loadtest_fake_server import serve
from loadtest.arrivals import schedule
from loadtest.lengths import LengthDist
from loadtest.prompts import PromptFactory
from loadtest.report import LoadReport, percentile
from loadtest.runner import LoadSpec, run_load
from loadtest.spec import rate_window_s
from loadtest.workload import Workload

RATE, REQUESTS, TOKENS, SEED = 40.0, 160, 8, 1
TTFT_MS, TPOT_MS = 20.0, 5.0  # the server's injected delays
WL = Workload("timing", LengthDist("fixed", 16, 16), LengthDist("fixed", TOKENS, TOKENS))
# docs/loadtest.md, "Timing over a socket": bounds in ms, for a 2-core machine busy but not oversubscribed
TTFT_ERROR_P50_MS, TTFT_ERROR_P99_MS = 5.0, 50.0
ITL_ERROR_P50_MS, ITL_ERROR_P99_MS = 1.0, 30.0
ARRIVAL_LATE_P99_MS = 50.0
RATE_MARGIN, CV_MARGIN = 0.02, 0.1


@dataclass(frozen=True)
class Measured:
    report: LoadReport
    stamps: dict[str, dict[str, Any]]  # the server's, by the first 80 characters of the prompt

    def pairs(self) -> list[tuple[Any, dict[str, Any]]]:
        """(client record, server stamps) per request, in the schedule's order."""
        factory = PromptFactory(WL, seed=SEED, output_tokens=TOKENS)
        return [(rec, self.stamps[factory.make(rec.index).prompt[:80]]) for rec in self.report.records]


@pytest.fixture(scope="module")
def measured() -> Iterator[Measured]:
    ctx = mp.get_context("spawn")
    port_q = ctx.Queue()
    server = ctx.Process(target=serve, args=(port_q, TTFT_MS, TPOT_MS), daemon=True)
    server.start()
    try:
        url = f"http://127.0.0.1:{port_q.get(timeout=60)}"
        spec = LoadSpec(
            url=url,
            model="fake",
            workload=WL,
            rate=RATE,
            requests=REQUESTS,
            output_tokens=TOKENS,
            seed=SEED,
            probe=False,
            scrape_server_metrics=False,
        )
        report = run_load(spec)
        with urllib.request.urlopen(url + "/stamps", timeout=30) as r:
            stamps = {s["key"]: s for s in json.loads(r.read())}
    finally:
        server.kill()
        server.join(10)
    assert report.requests_ok == REQUESTS, report.failures
    yield Measured(report, stamps)


def _ms(xs: list[float], p: float) -> float:
    value = percentile(sorted(xs), p)
    assert value is not None
    return value


def test_ttft_error_against_the_servers_own_stamps(measured: Measured) -> None:
    # client TTFT (scheduled send -> first token read) minus the server's (request read -> first token written):
    # the schedule lag, the request's way up and the token's way down; never below zero
    errors = [((rec.chunks[0].t - rec.scheduled_at) - (s["first"] - s["got"])) * 1000 for rec, s in measured.pairs()]
    print(f"\nTTFT error ms: min {min(errors):.3f} p50 {_ms(errors, 50):.3f} p99 {_ms(errors, 99):.3f}")
    assert min(errors) >= 0
    assert _ms(errors, 50) <= TTFT_ERROR_P50_MS and _ms(errors, 99) <= TTFT_ERROR_P99_MS
    assert measured.report.ttft_ms.p50 is not None and measured.report.ttft_ms.p50 >= TTFT_MS


def test_itl_error_against_the_servers_own_stamps(measured: Measured) -> None:
    errors = []
    for rec, s in measured.pairs():
        client = [b.t - a.t for a, b in zip(rec.chunks, rec.chunks[1:], strict=False)]
        server = [b - a for a, b in zip(s["tokens"], s["tokens"][1:], strict=False)]
        assert len(client) == len(server) == TOKENS - 1  # one chunk per token: pairs line up
        errors += [abs(c - v) * 1000 for c, v in zip(client, server, strict=True)]
    print(f"\n|ITL error| ms: p50 {_ms(errors, 50):.3f} p99 {_ms(errors, 99):.3f}")
    assert _ms(errors, 50) <= ITL_ERROR_P50_MS and _ms(errors, 99) <= ITL_ERROR_P99_MS
    assert measured.report.itl_ms.p50 is not None and measured.report.itl_ms.p50 >= TPOT_MS


def test_poisson_arrivals_reach_the_server_on_schedule(measured: Measured) -> None:
    from scipy import stats  # here, not at the top: ~2.5 s of every worker's collection without bytecode

    window = rate_window_s(LoadSpec(url="http://h:1", model="fake", workload=WL, rate=RATE, requests=REQUESTS), RATE)
    planned = schedule(RATE, count=REQUESTS, arrival="poisson", seed=SEED, rate_window_s=window)
    pairs = measured.pairs()
    start = pairs[0][0].scheduled_at
    assert [rec.scheduled_at - start for rec, _ in pairs] == pytest.approx(planned, abs=1e-9)
    got = [s["got"] for _, s in pairs]
    late = [(s["got"] - rec.scheduled_at) * 1000 for rec, s in pairs]  # schedule lag + the request's way up
    print(
        f"\narrival at the server - scheduled, ms: min {min(late):.3f} p50 {_ms(late, 50):.3f} p99 {_ms(late, 99):.3f}"
    )
    assert min(late) >= 0 and _ms(late, 99) <= ARRIVAL_LATE_P99_MS
    gaps = [b - a for a, b in zip(got, got[1:], strict=False)]
    planned_gaps = [b - a for a, b in zip(planned, planned[1:], strict=False)]
    rate_at_server, rate_planned = len(gaps) / (got[-1] - got[0]), len(gaps) / planned[-1]
    cv_at_server = statistics.stdev(gaps) / statistics.mean(gaps)
    cv_planned = statistics.stdev(planned_gaps) / statistics.mean(planned_gaps)
    print(
        f"rate at the server {rate_at_server:.2f}/s (planned {rate_planned:.2f}, asked {RATE}), "
        f"CV {cv_at_server:.3f} (planned {cv_planned:.3f})"
    )
    # the server sees the schedule: its rate and CV are the planned ones, up to the timing errors above
    assert abs(rate_at_server / rate_planned - 1) <= RATE_MARGIN and abs(cv_at_server - cv_planned) <= CV_MARGIN
    # and the schedule is Poisson: 159 gaps give the rate asked within 3 standard errors (1/sqrt(n)) and a CV
    # near 1; a longer schedule of the same generator has exponential gaps of mean 1/rate (Kolmogorov-Smirnov)
    assert abs(rate_planned / RATE - 1) <= 3 / len(gaps) ** 0.5 and 0.75 <= cv_planned <= 1.25
    long_run = schedule(RATE, count=5000, arrival="poisson", seed=SEED)
    long_gaps = [b - a for a, b in zip(long_run, long_run[1:], strict=False)]
    assert stats.kstest(long_gaps, "expon", args=(0, 1 / RATE)).pvalue > 0.01
