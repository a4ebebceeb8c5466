"""The KV-cache budget: from config.json, a GPU profile and a ServeConfig to KV tokens, max concurrency,
the largest max_model_len that fits, and feasible + reasons — before anything is launched.

The KV bytes (tuner.budget.kv_memory: what vLLM hands to the KV cache on a GPU or on vLLM-CPU) become whole
blocks the way vLLM pages them (kv_cache_utils: one pool per group of layers, sliding-window groups need
only the window), and KV tokens = max concurrency × max_model_len.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from launch.config import ServeConfig, speculation_on
from tuner.budget.calibration import gpu_weight_bytes
from tuner.budget.calibration_points import CalibrationPoint
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_memory import KVMemory, kv_memory
from tuner.budget.kv_paging import Paging
from tuner.budget.vllm_defaults import Effective, default_block_size, effective
from tuner.budget.vllm_runner import at_least as _at_least
from tuner.errors import UsageError
from tuner.layout import tp_problem
from tuner.model.spec import ModelSpec
from tuner.units import GIB


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

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> KVBudget:
        """A stored budget (``TrialResult.budget``) back. Budgets stored before vLLM's CUDA-graph estimate was
        modelled lack ``cudagraph_subtracted_bytes``: nothing was subtracted then."""
        return cls(**{"cudagraph_subtracted_bytes": 0, **d, "reasons": tuple(d.get("reasons") or ())})


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
    kv_dtype = config.kv_cache_dtype or "auto"
    block = config.block_size or default_block_size(spec, gpu)
    reasons: list[str] = []
    if kv_dtype != "auto" and kv_dtype.startswith("fp8") and not gpu.fp8_kv:
        why = " (vLLM-CPU needs AVX-512 or AMX for it; this host's CPU has neither)" if gpu.is_cpu else ""
        reasons.append(f"kv_cache_dtype {kv_dtype} is not supported on {gpu.name}{why}; use auto")
    tp = eff.tensor_parallel_size
    weights = -(-(spec.weight_bytes if gpu.is_cpu else gpu_weight_bytes(spec, kv_dtype)) // tp)
    memory = kv_memory(spec, gpu, config, eff, weights, environ, calibration)
    reasons += memory.reasons
    in_flight = eff.max_num_batched_tokens * _concurrent_batches(gpu, config)
    paging = Paging.of(spec, kv_dtype, tp, block, max_in_flight=in_flight)
    null_block = 1 if _at_least(eff.vllm_version, "0.32") else 0  # 0.32 plans against usable blocks
    budget = _paged(spec, gpu.name, eff, mml, kv_dtype, weights, memory, paging, null_block)
    need = (paging.blocks_per_request(mml) + null_block) * paging.bytes_per_block
    reasons += _problems(spec, config, budget, gpu, environ, need)
    return replace(budget, feasible=not reasons, reasons=tuple(reasons))


def _paged(
    spec: ModelSpec,
    gpu_name: str,
    eff: Effective,
    mml: int,
    kv_dtype: str,
    weights: int,
    memory: KVMemory,
    paging: Paging,
    null_block: int,
) -> KVBudget:
    """The budget of ``memory`` paged into whole blocks, taken as feasible (the caller judges)."""
    kv = memory.kv_cache_bytes
    num_blocks = max(0, kv) // paging.bytes_per_block
    per_req = paging.blocks_per_request(mml)
    concurrency = num_blocks / per_req if per_req else 0.0
    usable = kv - memory.margin_bytes - null_block * paging.bytes_per_block
    return KVBudget(
        gpu=gpu_name,
        vllm_version=eff.vllm_version,
        gpu_memory_utilization=eff.gpu_memory_utilization,
        max_model_len=mml,
        max_num_seqs=eff.max_num_seqs,
        max_num_batched_tokens=eff.max_num_batched_tokens,
        kv_cache_dtype=kv_dtype,
        block_size=paging.block_size,
        tensor_parallel_size=eff.tensor_parallel_size,
        kv_bytes_per_token=spec.kv_bytes_per_token(kv_dtype, eff.tensor_parallel_size),
        weight_bytes=weights,
        activation_bytes=memory.activation_bytes,
        non_torch_bytes=memory.non_torch_bytes,
        cudagraph_bytes=memory.cudagraph_bytes,
        cudagraph_subtracted_bytes=memory.cudagraph_subtracted_bytes,
        kv_cache_bytes=kv,
        margin_bytes=memory.margin_bytes,
        bytes_per_block=paging.bytes_per_block,
        num_blocks=num_blocks,
        kv_tokens=int(concurrency * mml),
        max_concurrency=concurrency,
        max_model_len_fit=paging.max_len_fitting(usable, spec.max_position_embeddings),
        feasible=True,
        reasons=(),
        basis=memory.basis,
    )


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
