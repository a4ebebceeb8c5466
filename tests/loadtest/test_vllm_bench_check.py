"""bench/vllm_bench_check.py reads each SLO per request from vLLM's detailed result (no vLLM needed)."""

from __future__ import annotations

import pytest

from bench.vllm_bench_check import per_request, summarize
from loadtest.slo import parse_slos


def _result() -> dict:
    # three requests: 5 tokens (4 ITLs of 10 ms), 1 token, and a failed one
    return {
        "ttfts": [0.1, 0.2, 0.0],
        "itls": [[0.01] * 4, [], []],
        "output_lens": [5, 1, 0],
        "start_times": [0.0, 1.0, 2.0],
        "errors": ["", "", "Bad Request"],
        "completed": 2,
        "duration": 3.0,
        "request_throughput": 0.67,
        "p95_tpot_ms": 10.0,
    }


def test_tpot_and_e2e_come_from_ttft_and_itls():
    r = _result()
    assert per_request(r, "tpot") == pytest.approx([0.01, 0.0, 0.0])
    assert per_request(r, "e2e") == pytest.approx([0.14, 0.2, 0.0])
    with pytest.raises(ValueError):
        per_request(r, "itl")


def test_every_slo_metric_is_judged_and_a_failure_counts_as_a_miss():
    s = summarize(_result(), parse_slos("ttft_p50=150ms,tpot_p50=20ms"))
    assert s["slo_values"] == pytest.approx({"ttft_p50": 200.0, "tpot_p50": 10.0})
    assert set(s["intervals"]) == {"ttft_p50", "tpot_p50"}
    assert s["held"] is False  # ttft's median (200 ms) misses 150 ms
    assert s["vllm_reported"]["p95_tpot_ms"] == 10.0
    assert summarize(_result(), parse_slos("tpot_p99=20ms"))["slo_values"]["tpot_p99"] is None  # the failure
