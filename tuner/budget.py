"""The KV-cache budget: from config.json, a GPU profile and a ServeConfig to KV tokens, max concurrency,
the largest max_model_len that fits, and feasible + reasons — before anything is launched.

GPU (vLLM 0.26 and 0.32, gpu_worker.determine_available_memory):
    KV bytes = total × gmu − weights − peak activation − non-torch − CUDA-graph estimate
(the estimate is subtracted unless VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 or enforce_eager),
or exactly ``kv_cache_memory_bytes`` when set. CPU (vLLM-CPU): KV bytes = VLLM_CPU_KVCACHE_SPACE GiB.
KV bytes become whole blocks the way vLLM pages them (kv_cache_utils: one pool per group of layers,
sliding-window groups need only the window), and KV tokens = max concurrency × max_model_len.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from launch.config import ServeConfig, speculation_on
from tuner.calibration import CUDA_CONTEXT_BYTES, CalibrationPoint, Settings, gpu_weight_bytes, overheads
from tuner.errors import UsageError
from tuner.gpu import GPUProfile
from tuner.kv_paging import Paging
from tuner.layout import tp_problem
from tuner.model_spec import ModelSpec
from tuner.units import GIB
from tuner.vllm_defaults import default_block_size, effective
from tuner.vllm_runner import at_least as _at_least
from tuner.vllm_runner import speculative_tokens, subtracts_cudagraph_estimate, uses_v1_runner


@dataclass(frozen=True)
class KVBudget:
    gpu: str
    vllm_version: str
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_dtype: str
    block_size: int
    tensor_parallel_size: int
    kv_bytes_per_token: int  # all layers, per GPU, before paging
    weight_bytes: int  # per GPU
    activation_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int  # the graph pool captured after the KV cache is allocated
    cudagraph_subtracted_bytes: int  # vLLM's estimate of it, taken off the KV cache (0 where vLLM does not)
    kv_cache_bytes: int  # what vLLM hands to the KV cache
    margin_bytes: int  # spare kept for prediction error when judging feasibility
    bytes_per_block: int
    num_blocks: int
    kv_tokens: int  # vLLM's kv_cache_size_tokens
    max_concurrency: float  # requests of max_model_len tokens that fit at once
    max_model_len_fit: int  # the largest max_model_len that fits (with the margin)
    feasible: bool
    reasons: tuple[str, ...]
    basis: str

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reasons"] = list(self.reasons)
        return d


def estimate_budget(
    spec: ModelSpec,
    gpu: GPUProfile,
    config: ServeConfig,
    *,
    vllm_version: str | None = None,
    env: Mapping[str, str] | None = None,
    calibration: Sequence[CalibrationPoint] | None = None,
) -> KVBudget:
    """Predict vLLM's KV budget for ``config`` on ``gpu``. ``None`` fields take vLLM's defaults.
    ``calibration``: the GPU calibration points to scale the overheads by (default: every stored one)."""
    spec = spec.with_dtype(config.dtype)
    environ = {**(os.environ if env is None else env), **dict(config.env)}
    mml = config.max_model_len or spec.max_position_embeddings
    eff = effective(config, gpu, vllm_version, mml)
    version, tp, gmu = eff.vllm_version, eff.tensor_parallel_size, eff.gpu_memory_utilization
    seqs, batched = eff.max_num_seqs, eff.max_num_batched_tokens
    kv_dtype = config.kv_cache_dtype or "auto"
    block = config.block_size or default_block_size(spec, gpu)
    reasons: list[str] = []
    if kv_dtype != "auto" and kv_dtype.startswith("fp8") and not gpu.fp8_kv:
        reasons.append(f"kv_cache_dtype {kv_dtype} is not supported on {gpu.name}; use auto")
    per_token = spec.kv_bytes_per_token(kv_dtype, tp)
    weights = -(-(spec.weight_bytes if gpu.is_cpu else gpu_weight_bytes(spec, kv_dtype)) // tp)
    settings = Settings(
        seqs,
        batched,
        tp,
        bool(config.enforce_eager),
        speculative_tokens(config.speculative_method, config.num_speculative_tokens),
        uses_v1_runner(spec, config.speculative_method, environ),
    )

    if gpu.is_cpu:
        act = nt = cg = subtracted = margin = 0
        kv, basis = _cpu_kv_bytes(spec, gpu, config, gmu, weights, environ, reasons)
    else:
        ov = overheads(spec, gpu.name, version, settings, calibration)
        act, nt, margin, basis = ov.activation_bytes, ov.non_torch_bytes, ov.margin_bytes, ov.basis
        cg = ov.cudagraph_bytes
        # 0.32 subtracts its CUDA-graph estimate from the KV budget; 0.26.0 only with the V1 model runner
        # (ngram/draft speculative decoding, most MoE models). The graphs themselves are captured after the
        # KV cache is allocated: what the estimate did not cover lands beyond gmu x total.
        subtract = subtracts_cudagraph_estimate(spec, version, config.speculative_method, environ)
        subtracted = ov.cudagraph_estimate_bytes if subtract else 0
        requested = gpu.memory_bytes * gmu
        free = gpu.memory_bytes - CUDA_CONTEXT_BYTES
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

    paging = Paging.of(spec, kv_dtype, tp, block, max_in_flight=batched * _concurrent_batches(gpu, config))
    null_block = 1 if _at_least(version, "0.32") else 0  # 0.32 plans against usable blocks
    num_blocks = max(0, kv) // paging.bytes_per_block
    per_req = paging.blocks_per_request(mml)
    concurrency = num_blocks / per_req if per_req else 0.0
    usable = kv - margin - null_block * paging.bytes_per_block
    fit = paging.max_len_fitting(usable, spec.max_position_embeddings)
    budget = KVBudget(
        gpu=gpu.name,
        vllm_version=version,
        gpu_memory_utilization=gmu,
        max_model_len=mml,
        max_num_seqs=seqs,
        max_num_batched_tokens=batched,
        kv_cache_dtype=kv_dtype,
        block_size=block,
        tensor_parallel_size=tp,
        kv_bytes_per_token=per_token,
        weight_bytes=weights,
        activation_bytes=act,
        non_torch_bytes=nt,
        cudagraph_bytes=cg,
        cudagraph_subtracted_bytes=subtracted,
        kv_cache_bytes=kv,
        margin_bytes=margin,
        bytes_per_block=paging.bytes_per_block,
        num_blocks=num_blocks,
        kv_tokens=int(concurrency * mml),
        max_concurrency=concurrency,
        max_model_len_fit=fit,
        feasible=True,
        reasons=(),
        basis=basis,
    )
    reasons += _problems(spec, config, budget, gpu, environ, (per_req + null_block) * paging.bytes_per_block)
    return replace(budget, feasible=not reasons, reasons=tuple(reasons))


def _problems(
    spec: ModelSpec, config: ServeConfig, b: KVBudget, gpu: GPUProfile, environ: Mapping[str, str], need: int
) -> list[str]:
    """Why vLLM would refuse this configuration at start (or nearly so, given the margin)."""
    out: list[str] = []
    mml, seqs, batched = b.max_model_len, b.max_num_seqs, b.max_num_batched_tokens
    long_ok = environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") in ("1", "true")
    if mml > spec.max_position_embeddings and not long_ok:
        out.append(
            f"max_model_len {mml} exceeds the model's max_position_embeddings "
            f"{spec.max_position_embeddings}; vLLM rejects it — lower max_model_len"
        )
    if batched < seqs:
        out.append(
            f"max_num_batched_tokens {batched} < max_num_seqs {seqs}; vLLM rejects it — raise "
            "max_num_batched_tokens or lower max_num_seqs"
        )
    if config.enable_chunked_prefill is False and batched < mml:
        out.append(
            f"chunked prefill is off and max_num_batched_tokens {batched} < max_model_len {mml}; vLLM rejects it"
        )
    if (why := tp_problem(spec, b.tensor_parallel_size)) is not None:  # attention and KV heads (tuner.layout)
        out.append(why)
    if b.kv_cache_bytes <= 0:
        out.append(
            f"no memory left for the KV cache: weights {b.weight_bytes / GIB:.2f} GiB + peak "
            f"activation {b.activation_bytes / GIB:.2f} GiB + non-torch {b.non_torch_bytes / GIB:.2f} "
            f"GiB + CUDA graphs {b.cudagraph_bytes / GIB:.2f} GiB exceed gmu "
            f"{b.gpu_memory_utilization} x {gpu.memory_gib:.2f} GiB — raise "
            "gpu_memory_utilization, quantize, or use a larger GPU"
        )
        return out
    usable = b.kv_cache_bytes - b.margin_bytes
    if need > usable:
        spare = f" (keeping {b.margin_bytes / GIB:.2f} GiB spare for prediction error)" if b.margin_bytes else ""
        out.append(
            f"one request of max_model_len {mml} needs {need / GIB:.3f} GiB of KV cache but "
            f"{usable / GIB:.3f} GiB is available{spare}; largest max_model_len that fits: "
            f"{b.max_model_len_fit}"
        )
    return out


def _cpu_kv_bytes(
    spec: ModelSpec,
    gpu: GPUProfile,
    config: ServeConfig,
    gmu: float,
    weights: int,
    environ: Mapping[str, str],
    reasons: list[str],
) -> tuple[int, str]:
    """vLLM-CPU (platforms/cpu.py): VLLM_CPU_KVCACHE_SPACE (integer GiB) overrides everything; else
    --kv-cache-memory-bytes; else ceil(total × gmu) − the worker's RSS (estimated as weights + 2 GiB)."""
    space = environ.get("VLLM_CPU_KVCACHE_SPACE", "")
    if space != "":
        try:
            kv = int(space) * GIB
        except ValueError:
            reasons.append(f"VLLM_CPU_KVCACHE_SPACE={space!r} is not an integer number of GiB; vLLM-CPU fails")
            return 0, "invalid VLLM_CPU_KVCACHE_SPACE"
        available = _host_available_bytes()
        if available is not None and kv + weights > available:
            reasons.append(
                f"VLLM_CPU_KVCACHE_SPACE={space} GiB plus weights {weights / GIB:.2f} GiB exceed "
                f"this host's available memory ({available / GIB:.1f} GiB); vLLM-CPU refuses to "
                "start — lower VLLM_CPU_KVCACHE_SPACE"
            )
        return kv, f"exact: VLLM_CPU_KVCACHE_SPACE={space} GiB"
    if config.kv_cache_memory_bytes:
        return config.kv_cache_memory_bytes, "exact: kv_cache_memory_bytes"
    rss = weights + 2 * GIB
    return int(math.ceil(gpu.memory_bytes * gmu) - rss), "estimate: auto-sized (ceil(total x gmu) - RSS)"


def _host_available_bytes() -> int | None:
    """MemAvailable of this host (vLLM-CPU checks the KV space against it at start)."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _concurrent_batches(gpu: GPUProfile, config: ServeConfig) -> int:
    """VllmConfig.max_concurrent_batches: async scheduling (on by default on GPU, off on CPU) keeps
    two batches in flight; speculative decoding turns it off."""
    return 1 if gpu.is_cpu or speculation_on(config.speculative_method) else 2


def emulated_gmu(target: GPUProfile, actual_memory_bytes: int, gmu: float) -> float:
    """The gpu_memory_utilization that gives, on a device with ``actual_memory_bytes``, the same
    requested memory (hence the same KV budget) as ``gmu`` on ``target``. Pass the target's default
    max_num_seqs / max_num_batched_tokens explicitly too: vLLM's defaults depend on device memory."""
    if target.memory_bytes * gmu > actual_memory_bytes:
        need = target.memory_bytes * gmu / GIB
        have = actual_memory_bytes / GIB
        raise UsageError(
            f"cannot emulate {target.name} at gmu {gmu}: it needs {need:.2f} GiB but the device has {have:.2f} GiB"
        )
    return target.memory_bytes * gmu / actual_memory_bytes
