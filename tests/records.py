"""Records that tests build by hand: a KV budget with plausible figures (a trial's ``budget``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tuner.budget.kv_budget import KVBudget

_BUDGET = KVBudget(
    gpu="h200",
    vllm_version="0.32.0",
    gpu_memory_utilization=0.9,
    max_model_len=2048,
    max_num_seqs=256,
    max_num_batched_tokens=2048,
    kv_cache_dtype="auto",
    block_size=16,
    tensor_parallel_size=1,
    kv_bytes_per_token=4096,
    weight_bytes=2 << 30,
    activation_bytes=1 << 30,
    non_torch_bytes=1 << 28,
    cudagraph_bytes=1 << 28,
    cudagraph_subtracted_bytes=0,
    kv_cache_bytes=1000 * 16 * 4096,
    margin_bytes=0,
    bytes_per_block=16 * 4096,
    num_blocks=1000,
    kv_tokens=16000,
    max_concurrency=16000 / 2048,
    max_model_len_fit=2048,
    feasible=True,
    reasons=(),
    basis="built by a test",
)


def kv_budget(**fields: Any) -> KVBudget:
    """A feasible budget of 1000 blocks of 16 tokens; ``fields`` replace its figures."""
    return replace(_BUDGET, **fields)
