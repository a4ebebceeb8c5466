"""The bytes vLLM hands to the KV cache, before they are paged (tuner.budget.kv_budget pages them).

GPU (vLLM 0.26 and 0.32, gpu_worker.determine_available_memory):
    KV bytes = total × gmu − weights − peak activation − non-torch − CUDA-graph estimate
(the estimate is subtracted unless VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 or enforce_eager),
or exactly ``kv_cache_memory_bytes`` when set. CPU (vLLM-CPU): KV bytes = VLLM_CPU_KVCACHE_SPACE GiB.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from launch.config import ServeConfig
from tuner.budget.calibration import CUDA_CONTEXT_BYTES, Settings, overheads
from tuner.budget.calibration_points import CalibrationPoint
from tuner.budget.gpu import GPUProfile
from tuner.budget.vllm_defaults import Effective
from tuner.budget.vllm_runner import speculative_tokens, subtracts_cudagraph_estimate, uses_v1_runner
from tuner.model.spec import ModelSpec
from tuner.units import GIB


@dataclass(frozen=True)
class KVMemory:
    """The KV cache's bytes and what was taken off before them; ``reasons``: why vLLM would refuse to start."""

    kv_cache_bytes: int
    basis: str
    activation_bytes: int = 0
    non_torch_bytes: int = 0
    cudagraph_bytes: int = 0  # the graph pool captured after the KV cache is allocated
    cudagraph_subtracted_bytes: int = 0  # vLLM's estimate of it, taken off the KV cache (0 where vLLM does not)
    margin_bytes: int = 0  # spare kept for prediction error when judging feasibility
    reasons: tuple[str, ...] = ()


def kv_memory(
    spec: ModelSpec,
    gpu: GPUProfile,
    config: ServeConfig,
    eff: Effective,
    weights: int,
    environ: Mapping[str, str],
    calibration: Sequence[CalibrationPoint] | None,
) -> KVMemory:
    """The KV cache's bytes for ``config`` on ``gpu`` with ``weights`` bytes of weights per GPU."""
    settings = Settings(
        eff.max_num_seqs,
        eff.max_num_batched_tokens,
        eff.tensor_parallel_size,
        bool(config.enforce_eager),
        speculative_tokens(config.speculative_method, config.num_speculative_tokens),
        uses_v1_runner(spec, config.speculative_method, environ),
    )
    if gpu.is_cpu:
        return _cpu_kv_memory(gpu, config, eff.gpu_memory_utilization, weights, environ)
    return _gpu_kv_memory(spec, gpu, config, eff, weights, environ, settings, calibration)


def _gpu_kv_memory(
    spec: ModelSpec,
    gpu: GPUProfile,
    config: ServeConfig,
    eff: Effective,
    weights: int,
    environ: Mapping[str, str],
    settings: Settings,
    calibration: Sequence[CalibrationPoint] | None,
) -> KVMemory:
    gmu, reasons = eff.gpu_memory_utilization, []
    ov = overheads(spec, gpu.name, eff.vllm_version, settings, calibration)
    act, nt, cg, margin = ov.activation_bytes, ov.non_torch_bytes, ov.cudagraph_bytes, ov.margin_bytes
    # 0.32 subtracts its CUDA-graph estimate from the KV budget; 0.26.0 only with the V1 model runner
    # (ngram/draft speculative decoding, most MoE models). The graphs themselves are captured after the
    # KV cache is allocated: what the estimate did not cover lands beyond gmu x total.
    subtract = subtracts_cudagraph_estimate(spec, eff.vllm_version, config.speculative_method, environ)
    subtracted = ov.cudagraph_estimate_bytes if subtract else 0
    requested = gpu.memory_bytes * gmu
    free = gpu.memory_bytes - CUDA_CONTEXT_BYTES
    basis = ov.basis
    if config.kv_cache_memory_bytes:
        kv, basis = config.kv_cache_memory_bytes, "exact: kv_cache_memory_bytes"
        subtracted = 0  # vLLM skips memory profiling
        if weights + act + nt + cg + kv + margin > free:
            reasons.append(
                f"kv_cache_memory_bytes {kv / GIB:.2f} GiB + weights {weights / GIB:.2f} "
                f"GiB + activations/overheads {(act + nt + cg) / GIB:.2f} GiB exceed "
                f"{gpu.name}'s {free / GIB:.2f} GiB free; lower kv_cache_memory_bytes"
            )
    else:
        kv = int(requested - weights - act - nt - subtracted)
        if requested > free:
            reasons.append(
                f"gpu_memory_utilization {gmu} asks for {requested / GIB:.2f} GiB but only "
                f"about {free / GIB:.2f} GiB is free after the CUDA context; vLLM refuses to "
                "start — lower gpu_memory_utilization"
            )
        elif requested - subtracted + cg > free:
            kept = f", {subtracted / GIB:.2f} GiB of it kept free by vLLM's estimate" if subtracted else ""
            reasons.append(
                f"CUDA graphs ({cg / GIB:.2f} GiB{kept}) are captured beyond gmu {gmu} x "
                f"{gpu.memory_gib:.2f} GiB and would not fit in the {free / GIB:.2f} GiB free "
                "— lower gpu_memory_utilization or set enforce_eager"
            )
    return KVMemory(kv, basis, act, nt, cg, subtracted, margin, tuple(reasons))


def _cpu_kv_memory(
    gpu: GPUProfile, config: ServeConfig, gmu: float, weights: int, environ: Mapping[str, str]
) -> KVMemory:
    """vLLM-CPU (platforms/cpu.py): VLLM_CPU_KVCACHE_SPACE (integer GiB) overrides everything; else
    --kv-cache-memory-bytes; else ceil(total × gmu) − the worker's RSS (estimated as weights + 2 GiB)."""
    space = environ.get("VLLM_CPU_KVCACHE_SPACE", "")
    if space != "":
        try:
            kv = int(space) * GIB
        except ValueError:
            why = f"VLLM_CPU_KVCACHE_SPACE={space!r} is not an integer number of GiB; vLLM-CPU fails"
            return KVMemory(0, "invalid VLLM_CPU_KVCACHE_SPACE", reasons=(why,))
        available = _host_available_bytes()
        reasons: tuple[str, ...] = ()
        if available is not None and kv + weights > available:
            reasons = (
                f"VLLM_CPU_KVCACHE_SPACE={space} GiB plus weights {weights / GIB:.2f} GiB exceed "
                f"this host's available memory ({available / GIB:.1f} GiB); vLLM-CPU refuses to "
                "start — lower VLLM_CPU_KVCACHE_SPACE",
            )
        return KVMemory(kv, f"exact: VLLM_CPU_KVCACHE_SPACE={space} GiB", reasons=reasons)
    if config.kv_cache_memory_bytes:
        return KVMemory(config.kv_cache_memory_bytes, "exact: kv_cache_memory_bytes")
    rss = weights + 2 * GIB
    return KVMemory(int(math.ceil(gpu.memory_bytes * gmu) - rss), "estimate: auto-sized (ceil(total x gmu) - RSS)")


def _host_available_bytes() -> int | None:
    """MemAvailable of this host (vLLM-CPU checks the KV space against it at start)."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
