"""End-to-end: the load generator against real vLLM on the CPU (one server for the whole module)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtest.arrivals import schedule
from loadtest.cli import main
from loadtest.metrics import timings
from loadtest.report import LoadReport
from loadtest.runner import LoadSpec, run_load
from loadtest.slo import parse_slos
from loadtest.spec import rate_window_s
from loadtest.workload import load_workload

pytestmark = pytest.mark.vllm
REQUESTS = 12  # the closed-loop test's, 128 tokens each
# client vs server means, closed loop at concurrency 4 on the 2-core machine (docs/loadtest.md, "Tests")
ITL_VS_SERVER_MS = 0.5
TTFT_OVER_SERVER_MS = 250.0


def _workload(tmp_path: Path, body: str, name: str = "w") -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(body)
    return p


def test_prompts_as_long_as_the_context_are_served(vllm_server: str, tiny_model: Path, tmp_path: Path) -> None:
    # vLLM rejects a prompt of more characters than tokens x its longest token string before tokenizing it;
    # random prompts of the synthetic vocabulary's longest words exceeded that near max_model_len (HTTP 400)
    wl = load_workload(_workload(tmp_path, "input_tokens: 2040\noutput_tokens: 8\n"))  # the server's 2048
    spec = LoadSpec(
        url=vllm_server, model="tiny", workload=wl, concurrency=2, requests=4, warmup=0, tokenizer=str(tiny_model)
    )
    r = run_load(spec)
    assert r.requests_ok == 4 and r.requests_failed == 0, [rec.detail for rec in r.records if rec.failure]
    assert r.input_tokens == 4 * 2040


def _closed_loop(vllm_server: str, tiny_model: Path, tmp_path: Path) -> LoadReport:
    """12 requests of 128 tokens each, 4 at a time, prompt lengths varying (2 warm-up requests first)."""
    wl = load_workload(_workload(tmp_path, "input_tokens: {dist: uniform, min: 20, max: 200}\noutput_tokens: 128\n"))
    spec = LoadSpec(
        url=vllm_server,
        model="tiny",
        workload=wl,
        concurrency=4,
        requests=REQUESTS,
        warmup=2,
        tokenizer=str(tiny_model),
        slos=parse_slos("ttft_p95=60s,tpot_p95=10s"),
    )
    return run_load(spec)


def test_closed_loop_completions_exact_tokens(vllm_server: str, tiny_model: Path, tmp_path: Path) -> None:
    r = _closed_loop(vllm_server, tiny_model, tmp_path)
    assert r.requests_ok == REQUESTS and r.requests_failed == 0, r.failures
    assert r.output_tokens == REQUESTS * 128
    assert r.token_counts_exact
    measured = [rec for rec in r.records if not rec.warmup]
    assert len(measured) == REQUESTS and sum(rec.warmup for rec in r.records) == 2
    # prompts are exactly the planned length (the server may add one BOS token to each)
    extra = {rec.prompt_tokens - rec.planned_input_tokens for rec in measured}
    assert len(extra) == 1 and extra <= {0, 1}, extra
    assert len({rec.planned_input_tokens for rec in measured}) > 1  # lengths really vary
    assert 0 < r.ttft_ms.p50 <= r.e2e_ms.p50
    for rec in measured:
        t = timings(rec)
        assert len(t.itl) == t.tokens - 1 == 127  # one ITL sample per token after the first
    srv = r.server  # how close our timings come to the server's: test_client_ttft_and_itl_agree_with_the_servers
    assert srv["server_requests"] == REQUESTS and srv["server_generation_tokens"] == REQUESTS * 128
    # vLLM's TTFT split (loadtest.server_metrics): the engine's queue and prefill, over the same requests here
    assert srv["queue_time_mean_ms"] >= 0 and 0 < srv["prefill_time_mean_ms"] <= srv["server_ttft_mean_ms"], srv
    assert r.itl_ms.mean <= r.tpot_ms.mean  # TPOT also spans each stream's tail after its last token
    assert r.slo_met is True and r.goodput_req_s == pytest.approx(r.throughput_req_s)
    # polled every 0.2 s during the run, in the load generator's own event loop: whether a poll lands while
    # the server runs a request depends on how the 2-core CI machine schedules the generator next to the
    # server (then not reniced). Twice in CI none did (with 64-token answers, then with 256: peak 0.0 while
    # every other figure held), and once more later for the KV gauge (kv_cache_usage_peak 0.0), so the
    # gauges must be read here, not seen above 0; the peak logic itself is tested against a scripted
    # /metrics (tests/loadtest, Scraper)
    assert "requests_running_peak" in r.server, r.server
    assert 0 <= r.server["kv_cache_usage_peak"] <= 1, r.server
    assert r.server["prefix_cache_hit_rate"] < 0.05  # random prompts must not hit the prefix cache


@pytest.mark.long  # a quiet machine: in CI's parallel session the other worker starves this client in bursts
def test_client_ttft_and_itl_agree_with_the_servers(vllm_server: str, tiny_model: Path, tmp_path: Path) -> None:
    """Against the server's own figures (/metrics histograms over the same requests): its ITL is the time between
    engine outputs, ours between chunks read, so the means differ only by how each stream's first and last token
    travelled (spread over 127 gaps); its TTFT counts from the request's arrival, ours from our send."""
    r = _closed_loop(vllm_server, tiny_model, tmp_path)
    srv = r.server
    print(f"\nTTFT mean {r.ttft_ms.mean:.2f} ms (server {srv['server_ttft_mean_ms']:.2f})")
    print(f"ITL mean {r.itl_ms.mean:.3f} ms (server {srv['server_itl_mean_ms']:.3f})")
    assert abs(r.itl_ms.mean - srv["server_itl_mean_ms"]) <= ITL_VS_SERVER_MS
    assert 0 <= r.ttft_ms.mean - srv["server_ttft_mean_ms"] <= TTFT_OVER_SERVER_MS


def test_shared_prefix_hits_the_cache(vllm_server: str, tiny_model: Path, tmp_path: Path) -> None:
    wl = load_workload(_workload(tmp_path, "input_tokens: 256\noutput_tokens: 4\nshared_prefix_fraction: 0.75\n"))
    r = run_load(
        LoadSpec(url=vllm_server, model="tiny", workload=wl, concurrency=1, requests=8, tokenizer=str(tiny_model))
    )
    assert r.requests_ok == 8
    assert r.server["prefix_cache_hit_rate"] > 0.4


def test_open_loop_chat_with_synthetic_words(vllm_server: str) -> None:
    spec = LoadSpec(
        url=vllm_server + "/v1",
        model="tiny",
        workload=load_workload("chat"),
        rate=20.0,
        requests=12,
        output_tokens=8,
        endpoint="chat",
        arrival="gamma",
        burstiness=0.5,
        seed=3,
    )
    r = run_load(spec)
    assert r.requests_ok == 12, r.failures
    assert r.output_tokens == 12 * 8
    # the seeded gamma schedule was followed (lag is reported apart: vLLM-CPU shares our 2 cores)
    start = r.records[0].scheduled_at
    offsets = schedule(20.0, count=12, arrival="gamma", burstiness=0.5, seed=3, rate_window_s=rate_window_s(spec, 20.0))
    assert [rec.scheduled_at - start for rec in r.records] == pytest.approx(offsets)
    assert r.schedule_lag_ms.p50 is not None and r.schedule_lag_ms.p50 >= 0


def test_rejected_requests_are_counted_not_raised(vllm_server: str, tiny_model: Path, tmp_path: Path) -> None:
    # a 2,100-token prompt exceeds --max-model-len 2048: vLLM answers HTTP 400
    wl = load_workload(_workload(tmp_path, "input_tokens: 2100\noutput_tokens: 8\n"))
    r = run_load(
        LoadSpec(url=vllm_server, model="tiny", workload=wl, concurrency=2, requests=4, tokenizer=str(tiny_model))
    )
    assert r.requests_ok == 0 and r.requests_failed == 4
    assert r.failures == {"http_400": 4}
    assert r.ttft_ms.p50 is None


def test_cli_writes_json_and_per_request(
    vllm_server: str, tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, per = tmp_path / "r.json", tmp_path / "req.jsonl"
    rc = main(
        [
            "--url",
            vllm_server,
            "--model",
            "tiny",
            "--tokenizer",
            str(tiny_model),
            "--workload",
            "code",
            "--concurrency",
            "2",
            "--requests",
            "6",
            "--output-tokens",
            "8",
            "--slo",
            "ttft_p95=1ms",
            "--json",
            str(out),
            "--per-request",
            str(per),
        ]
    )
    assert rc == 0
    d = json.loads(out.read_text())
    for key in (
        "requests_ok",
        "requests_failed",
        "failures",
        "output_tokens",
        "duration_s",
        "throughput_req_s",
        "throughput_tok_s",
        "goodput_req_s",
        "ttft_ms",
        "tpot_ms",
        "itl_ms",
        "e2e_ms",
    ):
        assert key in d
    assert set(d["ttft_ms"]) == {"mean", "p50", "p90", "p95", "p99"}
    assert d["requests_ok"] == 6 and d["slo_met"] is False and d["goodput_req_s"] == 0.0
    lines = [json.loads(x) for x in per.read_text().splitlines()]
    assert len(lines) == 6 and all(x["chunks"] and x["failure"] is None for x in lines)
    assert "TTFT" in capsys.readouterr().out


def test_cli_warns_when_a_run_re_sends_prompts_the_server_cached(
    vllm_server: str, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(seed: int) -> str:
        argv = ["--url", vllm_server, "--model", "tiny", "--tokenizer", str(tiny_model), "--workload", "chat",
                "--concurrency", "2", "--requests", "6", "--output-tokens", "4", "--seed", str(seed)]  # fmt: skip
        assert main(argv) == 0
        return capsys.readouterr().err

    run(9137)
    again = run(9137)  # the same prompts: answered from vLLM's prefix cache
    assert "prefix cache" in again and "--seed 9137 re-sends the same ones" in again, again
    assert "prefix cache" not in run(9138)


def test_cli_unknown_model_is_bad_input(vllm_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--url", vllm_server, "--model", "no-such-model", "--requests", "2"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "no-such-model" in err and "HTTP 404" in err
