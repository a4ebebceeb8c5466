from __future__ import annotations

from launch.readback import ReadBack, parse_cache_config_info, parse_startup_log


def test_real_cpu_metrics_and_log(launch_data) -> None:
    metrics = parse_cache_config_info((launch_data / "logs" / "cpu-0.32-good.metrics").read_text())
    assert metrics.kv_cache_size_tokens == 1_048_576 and metrics.num_gpu_blocks == 8192
    assert metrics.block_size == 128 and metrics.cache_dtype == "auto"
    assert metrics.kv_cache_memory_bytes == 1 << 30 and metrics.max_concurrency == 256.0
    log = parse_startup_log((launch_data / "logs" / "cpu-0.32-good.log").read_text())
    assert log.kv_cache_size_tokens == 1_048_576 and log.available_kv_gib == 1.0
    assert log.max_concurrency == 256.0 and log.max_model_len == 4096
    assert log.weights_gib is None  # the CPU build does not log a memory profile
    both = metrics.merged(log)
    assert both.kv_cache_size_tokens == 1_048_576 and both.available_kv_gib == 1.0 and both.block_size == 128


def test_gpu_026_log_lines() -> None:
    # vLLM 0.26.0 format strings (v1/worker/gpu_worker.py, v1/core/kv_cache_utils.py) as logged on an H200
    log = "\n".join(
        [
            "(EngineCore_DP0 pid=88) INFO 11-28 10:00:01 [model.py:2152] Using max model len 8192",
            "(EngineCore_DP0 pid=88) INFO 11-28 10:00:31 [gpu_model_runner.py:5348] Model loading took 14.99 GiB "
            "memory and 7.512345 seconds",
            "(EngineCore_DP0 pid=88) INFO 11-28 10:01:40 [gpu_worker.py:561] Available KV cache memory: 108.1 GiB",
            "(EngineCore_DP0 pid=88) INFO 11-28 10:01:41 [kv_cache_utils.py:2177] GPU KV cache size: 885,536 tokens",
            "(EngineCore_DP0 pid=88) INFO 11-28 10:01:41 [kv_cache_utils.py:2179] Maximum concurrency for 8,192 "
            "tokens per request: 108.10x",
            "(EngineCore_DP0 pid=88) INFO 11-28 10:02:10 [gpu_worker.py:857] Free memory on device (138.6/139.81 "
            "GiB) on startup. Desired GPU memory utilization is (0.9, 125.83 GiB). Actual usage is 14.99 GiB for "
            "weight, 2.13 GiB for peak activation, 0.61 GiB for non-torch memory, and 0.52 GiB for CUDAGraph "
            "memory. Replace gpu_memory_utilization config with `--kv-cache-memory=115323453030` (107.4 GiB) to "
            "fit into requested memory. Current kv cache memory in use is 108.1 GiB.",
        ]
    )
    rb = parse_startup_log(log)
    assert rb == ReadBack(
        kv_cache_size_tokens=885_536,
        weights_gib=14.99,
        peak_activation_gib=2.13,
        non_torch_gib=0.61,
        cudagraph_gib=0.52,
        available_kv_gib=108.1,
        max_concurrency=108.1,
        max_model_len=8192,
    )


def test_model_loading_line_is_the_weights_fallback() -> None:
    rb = parse_startup_log("INFO [gpu_model_runner.py:5348] Model loading took 4.2 GiB memory and 3.0 s")
    assert rb.weights_gib == 4.2 and rb.peak_activation_gib is None


def test_missing_metrics_and_none_labels() -> None:
    assert parse_cache_config_info("# HELP other\nvllm:num_requests_running 0.0\n") == ReadBack()
    line = 'vllm:cache_config_info{block_size="16",num_gpu_blocks="None",kv_cache_size_tokens="None"} 1.0'
    rb = parse_cache_config_info(line)
    assert rb.block_size == 16 and rb.num_gpu_blocks is None and rb.kv_cache_size_tokens is None
