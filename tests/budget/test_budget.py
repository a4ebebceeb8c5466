"""estimate_budget: the vLLM memory formula, paging into blocks, defaults, feasibility and its reasons."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from configs import GEMMA2_9B, GEMMA3_1B, LLAMA_3_8B, MIXTRAL_8X7B, QWEN2_5_7B

from launch.config import ServeConfig
from tuner.budget.calibration_points import load_points
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_budget import emulated_gmu, estimate_budget
from tuner.budget.vllm_defaults import DEFAULT_GMU, default_batch_limits
from tuner.errors import UsageError
from tuner.model.spec import ModelSpec
from tuner.synthetic import shape_config
from tuner.units import GIB

CPU = GPUProfile.load("cpu")
H200 = GPUProfile.load("h200")


def cfg(**kw) -> ServeConfig:
    return ServeConfig(model="m", **kw)


def test_cpu_kv_space_pages_into_128_token_blocks() -> None:
    spec = ModelSpec.from_config(shape_config("llama-tiny"))
    b = estimate_budget(spec, CPU, cfg(), vllm_version="0.32.0", env={"VLLM_CPU_KVCACHE_SPACE": "1"})
    per_block = 128 * spec.kv_bytes_per_token()
    assert b.block_size == 128 and b.bytes_per_block == per_block and b.num_blocks == GIB // per_block
    blocks_per_request = math.ceil(spec.max_position_embeddings / 128)
    assert b.max_concurrency == pytest.approx((GIB // per_block) / blocks_per_request)
    assert b.feasible and b.reasons == () and b.basis.startswith("exact")


def _cpu_runs() -> list:
    return [p for p in load_points() if p.device == "cpu"]


@pytest.mark.parametrize("run", _cpu_runs(), ids=lambda p: p.source.split(": ", 1)[-1])
def test_every_recorded_vllm_cpu_run_is_predicted_exactly(run) -> None:
    """vLLM-CPU 0.32's own figures (bench/budget_accuracy.py --cpu-runs: "CPU KV cache size: N tokens", or
    the start refused): KV space, dtypes, block sizes, lengths that are not block multiples, sliding
    windows, MLA, the largest length that fits and one block past it. Nothing is fitted on the CPU."""
    knobs = {k: v for k, v in run.settings.items() if k in ServeConfig.__dataclass_fields__ and k != "env"}
    env = {str(k): str(v) for k, v in (run.settings.get("env") or {}).items()}
    host = replace(CPU, fp8_kv=True)  # its fp8 run started where it was recorded; this host may lack AVX-512
    b = estimate_budget(run.spec(), host, cfg(**knobs), vllm_version=run.vllm_version, env=env)
    assert b.feasible == run.reported["started"], b.reasons
    if run.reported["started"]:
        assert b.kv_tokens == run.reported["kv_tokens"]


def test_the_recorded_cpu_runs_cover_what_the_formula_distinguishes() -> None:
    runs = _cpu_runs()
    assert any(not r.reported["started"] for r in runs) and any(r.settings.get("kv_cache_dtype") for r in runs)
    assert any((r.settings.get("max_model_len") or 128) % 128 for r in runs)  # a length between blocks


def test_config_env_wins_over_process_env() -> None:
    spec = ModelSpec.from_config(shape_config("llama-tiny"))
    b = estimate_budget(
        spec,
        CPU,
        cfg(env=(("VLLM_CPU_KVCACHE_SPACE", "2"),)),
        vllm_version="0.32.0",
        env={"VLLM_CPU_KVCACHE_SPACE": "1"},
    )
    assert b.kv_cache_bytes == 2 * GIB


def test_gpu_0_26_gives_every_requested_byte_to_the_kv_cache_and_captures_graphs_after_it() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)

    def at(gmu: float, seqs: int | None = None):
        return estimate_budget(
            spec, H200, cfg(gpu_memory_utilization=gmu, max_num_seqs=seqs), vllm_version="0.26.0", env={}
        )

    assert at(0.9).kv_cache_bytes - at(0.8).kv_cache_bytes == pytest.approx(0.1 * H200.memory_bytes, abs=2)
    few, many = at(0.9, 64), at(0.9, 1024)  # more sequences: more CUDA-graph memory, the same KV cache
    assert many.cudagraph_bytes > few.cudagraph_bytes > 0 and many.kv_cache_bytes == few.kv_cache_bytes
    assert few.weight_bytes == spec.weight_bytes and few.block_size == 16
    assert few.num_blocks * 16 * spec.kv_bytes_per_token() <= few.kv_cache_bytes
    assert (few.num_blocks + 1) * 16 * spec.kv_bytes_per_token() > few.kv_cache_bytes
    assert few.feasible


def test_0_32_subtracts_the_cudagraph_estimate_unless_disabled_or_eager() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    on = estimate_budget(spec, H200, cfg(), vllm_version="0.32.0", env={})
    off = estimate_budget(
        spec, H200, cfg(), vllm_version="0.32.0", env={"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "0"}
    )
    eager = estimate_budget(spec, H200, cfg(enforce_eager=True), vllm_version="0.32.0", env={})
    assert on.cudagraph_bytes > 0 and eager.cudagraph_bytes == 0
    assert off.kv_cache_bytes == on.kv_cache_bytes + on.cudagraph_bytes
    assert eager.kv_cache_bytes == off.kv_cache_bytes


def test_0_26_graphs_beyond_gmu_must_still_fit() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    b = estimate_budget(spec, H200, cfg(gpu_memory_utilization=0.992), vllm_version="0.26.0", env={})
    assert not b.feasible and any("CUDA graphs" in r for r in b.reasons)
    eager = estimate_budget(
        spec, H200, cfg(gpu_memory_utilization=0.992, enforce_eager=True), vllm_version="0.26.0", env={}
    )
    assert eager.feasible


def test_kv_cache_memory_bytes_is_taken_exactly() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    b = estimate_budget(spec, H200, cfg(kv_cache_memory_bytes=10 * GIB), vllm_version="0.26.0", env={})
    assert b.kv_cache_bytes == 10 * GIB and b.basis.startswith("exact")


def test_defaults_follow_vllm() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    b = estimate_budget(spec, H200, cfg(), vllm_version="0.26.0", env={})
    assert b.gpu_memory_utilization == DEFAULT_GMU == 0.92
    assert b.max_model_len == 8192 and (b.max_num_seqs, b.max_num_batched_tokens) == (1024, 8192)
    assert default_batch_limits(GPUProfile.load("a100-80gb"), "0.26.0") == (256, 2048)  # A100 excluded
    assert default_batch_limits(GPUProfile.load("a30"), "0.26.0") == (256, 2048)
    assert default_batch_limits(CPU, "0.32.0") == (128, 2048)


def test_fp8_kv_halves_bytes_per_token() -> None:
    spec = ModelSpec.from_config(QWEN2_5_7B)
    auto = estimate_budget(spec, H200, cfg(max_model_len=8192), vllm_version="0.26.0", env={})
    fp8 = estimate_budget(spec, H200, cfg(max_model_len=8192, kv_cache_dtype="fp8"), vllm_version="0.26.0", env={})
    assert fp8.kv_bytes_per_token * 2 == auto.kv_bytes_per_token
    assert fp8.kv_tokens == pytest.approx(2 * auto.kv_tokens, rel=0.001)


@pytest.mark.parametrize("fp8_kv", [False, True])
def test_fp8_kv_on_a_cpu_without_avx512_is_refused_with_why(fp8_kv: bool) -> None:
    spec = ModelSpec.from_config(QWEN2_5_7B)
    cpu = replace(CPU, fp8_kv=fp8_kv)
    b = estimate_budget(spec, cpu, cfg(max_model_len=4096, kv_cache_dtype="fp8"), vllm_version="0.32.0", env={})
    refused = [r for r in b.reasons if "kv_cache_dtype fp8" in r]
    assert bool(refused) is not fp8_kv
    assert all("needs AVX-512 or AMX" in r and r.endswith("use auto") for r in refused)


def test_tensor_parallel_splits_weights_and_kv_heads() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    one = estimate_budget(spec, H200, cfg(), vllm_version="0.26.0", env={})
    two = estimate_budget(spec, H200, cfg(tensor_parallel_size=2), vllm_version="0.26.0", env={})
    assert two.weight_bytes == pytest.approx(one.weight_bytes / 2, abs=1)
    assert two.kv_bytes_per_token * 2 == one.kv_bytes_per_token


def test_gemma2_hybrid_groups_need_only_the_window_for_sliding_layers() -> None:
    spec = ModelSpec.from_config(GEMMA2_9B)
    b = estimate_budget(spec, H200, cfg(), vllm_version="0.26.0", env={})
    page = 16 * spec.kv_bytes_per_token_layer()
    assert b.bytes_per_block == 21 * page  # 21 sliding + 21 full layers -> two groups sharing 21 pools
    in_flight = 2 * b.max_num_batched_tokens  # async scheduling keeps two batches in flight
    per_req = math.ceil(8192 / 16) + math.ceil(min(4096 - 1 + in_flight, 8192) / 16) + 1
    assert b.max_concurrency == pytest.approx(b.num_blocks / per_req)


def test_gemma3_pads_groups_to_the_smallest_layer_count() -> None:
    spec = ModelSpec.from_config(GEMMA3_1B)
    b = estimate_budget(spec, H200, cfg(max_model_len=32768), vllm_version="0.26.0", env={})
    # 22 sliding + 4 full layers -> groups of 4: 6 sliding groups + 1 full group
    assert b.bytes_per_block == 4 * 16 * spec.kv_bytes_per_token_layer()


def test_weights_that_do_not_fit_are_rejected_with_the_numbers() -> None:
    spec = ModelSpec.from_config(MIXTRAL_8X7B)
    b = estimate_budget(spec, GPUProfile.load("a100-80gb"), cfg(), vllm_version="0.26.0", env={})
    assert not b.feasible and b.kv_cache_bytes <= 0
    assert any("no memory left for the KV cache" in r and "weights 87.00 GiB" in r for r in b.reasons)


def test_too_long_max_model_len_is_rejected_and_the_fit_reported() -> None:
    spec = ModelSpec.from_config(shape_config("llama-tiny", max_position_embeddings=4_000_000))
    b = estimate_budget(
        spec, CPU, cfg(max_model_len=2_000_000), vllm_version="0.32.0", env={"VLLM_CPU_KVCACHE_SPACE": "1"}
    )
    assert not b.feasible and "largest max_model_len that fits" in b.reasons[0]
    ok = estimate_budget(
        spec, CPU, cfg(max_model_len=b.max_model_len_fit), vllm_version="0.32.0", env={"VLLM_CPU_KVCACHE_SPACE": "1"}
    )
    over = estimate_budget(
        spec,
        CPU,
        cfg(max_model_len=b.max_model_len_fit + 128),
        vllm_version="0.32.0",
        env={"VLLM_CPU_KVCACHE_SPACE": "1"},
    )
    assert ok.feasible and not over.feasible


def test_null_block_is_reserved_from_0_32_on() -> None:
    spec = ModelSpec.from_config(shape_config("llama-tiny", max_position_embeddings=4_000_000))
    exact = GIB // (128 * spec.kv_bytes_per_token()) * 128  # every block of 1 GiB for one request
    new = estimate_budget(
        spec, CPU, cfg(max_model_len=exact), vllm_version="0.32.0", env={"VLLM_CPU_KVCACHE_SPACE": "1"}
    )
    old = estimate_budget(
        spec, CPU, cfg(max_model_len=exact), vllm_version="0.26.0", env={"VLLM_CPU_KVCACHE_SPACE": "1"}
    )
    assert old.feasible and not new.feasible


@pytest.mark.parametrize(
    ("kw", "text"),
    [
        ({"max_model_len": 16384}, "exceeds the model's max_position_embeddings"),
        ({"max_num_seqs": 512, "max_num_batched_tokens": 256}, "max_num_batched_tokens 256 < max_num_seqs 512"),
        ({"tensor_parallel_size": 3}, "not divisible by tensor_parallel_size 3"),
        ({"gpu_memory_utilization": 0.999}, "vLLM refuses to start"),
    ],
)
def test_vllm_rejections_are_reasons(kw: dict, text: str) -> None:
    b = estimate_budget(ModelSpec.from_config(LLAMA_3_8B), H200, cfg(**kw), vllm_version="0.26.0", env={})
    assert not b.feasible and any(text in r for r in b.reasons)


def test_long_context_allowed_by_env() -> None:
    b = estimate_budget(
        ModelSpec.from_config(LLAMA_3_8B),
        H200,
        cfg(max_model_len=16384),
        vllm_version="0.26.0",
        env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
    )
    assert b.feasible


def test_to_dict_has_the_contract_keys() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    d = estimate_budget(spec, H200, cfg(), vllm_version="0.26.0", env={}).to_dict()
    for key in (
        "kv_bytes_per_token",
        "weight_bytes",
        "kv_cache_bytes",
        "kv_tokens",
        "max_concurrency",
        "feasible",
        "reasons",
    ):
        assert key in d
    assert isinstance(d["reasons"], list)


def test_emulated_gmu_reproduces_the_target_budget() -> None:
    a30 = GPUProfile.load("a30")
    gmu = emulated_gmu(a30, H200.memory_bytes, 0.9)
    assert H200.memory_bytes * gmu == pytest.approx(a30.memory_bytes * 0.9)
    spec = ModelSpec.from_config(shape_config("qwen2.5-7b"))
    seqs, batched = default_batch_limits(a30, "0.26.0")
    on_a30 = estimate_budget(spec, a30, cfg(gpu_memory_utilization=0.9), vllm_version="0.26.0", env={})
    on_h200 = estimate_budget(
        spec,
        H200,
        cfg(gpu_memory_utilization=gmu, max_num_seqs=seqs, max_num_batched_tokens=batched),
        vllm_version="0.26.0",
        env={},
    )
    # same requested memory; KV differs only by the overheads (the H200 ones are calibrated, the A30 not)
    assert on_h200.kv_cache_bytes + on_h200.activation_bytes + on_h200.non_torch_bytes == pytest.approx(
        on_a30.kv_cache_bytes + on_a30.activation_bytes + on_a30.non_torch_bytes, abs=2
    )
    with pytest.raises(UsageError):
        emulated_gmu(H200, a30.memory_bytes, 0.9)


def test_cpu_kv_space_beyond_the_host_memory_is_rejected() -> None:
    spec = ModelSpec.from_config(shape_config("llama-tiny"))
    b = estimate_budget(spec, CPU, cfg(), vllm_version="0.32.0", env={"VLLM_CPU_KVCACHE_SPACE": "100000"})
    assert not b.feasible and "available memory" in b.reasons[0]
