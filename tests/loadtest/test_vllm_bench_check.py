"""bench/vllm_bench_check.py reads each SLO per request from vLLM's detailed result (no vLLM needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.vllm_bench_check import error_counts, per_request, server_and_client_reader, server_view, summarize
from bench.vllm_bench_steady import records_of
from loadtest.host_cpu import HostCpuMeter
from loadtest.server_metrics import parse_prometheus
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
    assert s["failed"] == 1 and s["errors"] == {"Bad Request": 1}
    assert s["sent_rate_req_s"] == pytest.approx(1.0)  # three sends over 2 s: the realized arrival rate
    assert summarize(_result(), parse_slos("tpot_p99=20ms"))["slo_values"]["tpot_p99"] is None  # the failure


def test_each_error_is_counted_by_its_last_line():
    last = "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected"
    trace = f"Traceback (most recent call last):\n  File x\n{last}\n"
    assert error_counts(["", trace, trace, "Bad Request"]) == {last: 2, "Bad Request": 1}


def _metrics(queries: int, hits: int, preemptions: int) -> tuple[dict, dict]:
    return parse_prometheus(
        f'vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {queries}.0\n'
        f'vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {hits}.0\n'
        f'vllm:num_preemptions_total{{engine="0",model_name="m"}} {preemptions}.0\n'
        'vllm:cache_config_info{block_size="16",num_gpu_blocks="300"} 1.0\n'
    )


def test_a_run_answered_from_the_prefix_cache_is_flagged_with_the_seed():
    fresh = server_view(_metrics(1000, 40, 2), _metrics(5000, 140, 9), 0.0, 11)
    assert fresh["cached_prompts_warning"] is None
    assert fresh["server"]["prefix_cache_hit_rate"] == pytest.approx(100 / 4000)
    assert fresh["server"]["preemptions"] == 7 and fresh["server"]["kv_cache_tokens"] == 4800
    again = server_view(_metrics(5000, 140, 9), _metrics(9000, 3540, 9), 0.0, 11)
    assert "85% of prompt tokens" in again["cached_prompts_warning"] and "--seed 11" in again["cached_prompts_warning"]
    assert server_view(_metrics(5000, 140, 9), _metrics(9000, 3540, 9), 0.7, 11)["cached_prompts_warning"] is None
    assert server_view(None, _metrics(1, 1, 1), 0.0, 11) == {"server": None, "cached_prompts_warning": None}


def test_the_gauges_peaks_polled_during_the_run_are_reported():
    from loadtest.server_metrics import raise_peaks

    peaks: dict[str, float] = {}
    for usage, running in ((0.41, 30), (0.84, 91), (0.62, 70)):  # three polls of vLLM's gauges
        raise_peaks(peaks, parse_prometheus(
            f'vllm:kv_cache_usage_perc{{engine="0"}} {usage}\nvllm:num_requests_running{{engine="0"}} {running}\n'
        )[0])  # fmt: skip
    assert peaks == {"kv_cache_usage": 0.84, "requests_running": 91}  # no waiting gauge read: no waiting peak
    view = server_view(_metrics(1000, 40, 2), _metrics(5000, 140, 9), 0.0, 11, peaks)
    assert view["server"]["kv_cache_usage_peak"] == 0.84 and view["server"]["requests_running_peak"] == 91


def _steady_result(lifetime_s: float, n: int = 120, gap_s: float = 0.5) -> dict:
    """``n`` requests ``gap_s`` apart, each a 0.1-s first token then 9 tokens spread over ``lifetime_s``."""
    itl = (lifetime_s - 0.1) / 9
    return {
        "ttfts": [0.1] * n,
        "itls": [[itl] * 9] * n,
        "output_lens": [10] * n,
        "start_times": [1000.0 + gap_s * i for i in range(n)],
        "errors": [""] * n,
        "completed": n,
        "duration": n * gap_s + lifetime_s,
        "request_throughput": 1.0,
    }


def test_the_runs_requests_become_records_on_its_clock():
    recs = records_of(_result())
    assert [r.ok for r in recs] == [True, True, False] and recs[2].failure == "server_error"
    assert recs[0].sent_at == 0.0 and recs[0].chunks[0].t == pytest.approx(0.1)
    assert len(recs[0].chunks) == 5 and recs[0].done_at == pytest.approx(0.14)
    assert recs[1].done_at == pytest.approx(1.2)  # one token: done at its first


def test_a_run_shorter_than_four_request_lifetimes_did_not_hold_though_every_slo_did():
    # the 1.3 x cross-check of results/cpu-family-launch-2026-12-05: TTFT in time, the batch still growing
    slos = parse_slos("ttft_p95=2s")
    short = summarize(_steady_result(lifetime_s=30.0), slos)
    assert short["slo_held"] is True and short["held"] is False
    assert any("mean request lifetimes" in r for r in short["steady"]["reasons"])
    steady = summarize(_steady_result(lifetime_s=2.0), slos)
    assert steady["slo_held"] is True and steady["steady"]["reasons"] == [] and steady["held"] is True


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="Linux /proc only")
def test_the_servers_cpu_is_its_own_not_other_processes():
    """--server-pid: the server (here a spinner outside this process's tree, as launch.sh's server is) counts
    with the client, so 'others' is what neither used."""
    spin = "import time\nend = time.process_time() + 5\nwhile time.process_time() < end: pass\n"
    daemon = (
        "import os, subprocess, sys\n"
        "quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # run() must not wait for its pipes\n"
        f"p = subprocess.Popen([sys.executable, '-c', {spin!r}], start_new_session=True, **quiet)\n"
        "print(p.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run([sys.executable, "-c", daemon], check=True, capture_output=True, text=True)
    server = int(out.stdout)
    try:
        ours, plain = HostCpuMeter(server_and_client_reader(server)), HostCpuMeter()
        ours.start(), plain.start()
        time.sleep(1.0)
        used, unattributed = ours.stop(), plain.stop()
    finally:
        os.kill(server, signal.SIGKILL)
    assert used is not None and unattributed is not None
    assert used.tree * used.seconds >= 0.4, used  # the spinning server's CPU-seconds
    assert unattributed.others - used.others >= 0.3, (used, unattributed)  # which the plain meter calls others'
