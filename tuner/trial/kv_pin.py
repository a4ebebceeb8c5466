"""The KV cache a configuration is certified and deployed with: pinned to the blocks its trial's server had.

vLLM sizes the KV cache at each start from a memory profile whose peak-activation term differs between starts of
one configuration (vLLM 0.26 on the H200 logged 1.01 and 0.24 GiB: 52,768 and 65,344 KV tokens with the A30's
memory emulated, docs/certification.md). On a small GPU that moves a KV-bound configuration's capacity by a
quarter, so a soak on one start and a user's launch on another would not measure the same server. With
``--kv-cache-memory-bytes`` vLLM reserves exactly that many bytes and skips the profile: the certification's
server, launch.sh and the exports then get the trial's blocks. vLLM-CPU's KV cache is fixed by
VLLM_CPU_KVCACHE_SPACE already: nothing is pinned there.
"""

from __future__ import annotations

from dataclasses import replace

from launch.config import ServeConfig
from launch.readback import ReadBack
from tuner.budget.kv_paging import Paging
from tuner.model.spec import ModelSpec


def kv_bytes_of(config: ServeConfig, readback: ReadBack, spec: ModelSpec) -> int | None:
    """The bytes that give vLLM exactly ``readback``'s KV blocks (num_blocks = bytes // bytes per block);
    None when the server did not report its blocks."""
    if not readback.num_gpu_blocks or not readback.block_size:
        return None
    kv_dtype = config.kv_cache_dtype or "auto"
    paging = Paging.of(spec.with_dtype(config.dtype), kv_dtype, config.tensor_parallel_size or 1,
                       readback.block_size, max_in_flight=0)  # fmt: skip
    return readback.num_gpu_blocks * paging.bytes_per_block


def pinned(config: ServeConfig, readback: ReadBack | None, spec: ModelSpec, is_cpu: bool) -> ServeConfig:
    """``config`` with its KV cache pinned to the trial's blocks (GPU only; a set value is kept)."""
    if is_cpu or readback is None or config.kv_cache_memory_bytes is not None:
        return config
    kv = kv_bytes_of(config, readback, spec)
    return config if kv is None else replace(config, kv_cache_memory_bytes=kv)


def pin_note(before: ServeConfig, after: ServeConfig, readback: ReadBack | None) -> str | None:
    """One line for launch.sh and the console: what ``pinned`` added (None when it added nothing)."""
    kv = after.kv_cache_memory_bytes
    if kv is None or before.kv_cache_memory_bytes == kv or readback is None:
        return None
    tokens = f"{readback.kv_cache_size_tokens:,} tokens, " if readback.kv_cache_size_tokens else ""
    return (
        f"KV cache pinned to the trial server's {tokens}{readback.num_gpu_blocks:,} blocks "
        f"(--kv-cache-memory-bytes {kv}): vLLM's memory profile, and so its KV cache, differs between starts"
    )


def kv_mismatch(trial_tokens: int | None, soak_tokens: list[int | None]) -> str | None:
    """A line when a certification's servers had another KV cache than the trial's (None: the same, or unknown):
    the certificate would then describe another server than the one launch.sh starts."""
    other = sorted({t for t in soak_tokens if t is not None and trial_tokens is not None and t != trial_tokens})
    if not other:
        return None
    seen = ", ".join(f"{t:,}" for t in other)
    return f"the certifying server had {seen} KV tokens, the trial's {trial_tokens:,}: not the server launch.sh starts"
