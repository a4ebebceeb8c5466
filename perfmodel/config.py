"""What the model needs to know of one vLLM configuration: its scheduler limits and its KV cache, taken from
the ServeConfig and the KV budget ``tuner.budget.kv_budget`` predicts for it (or the block count vLLM read back)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from launch.config import ServeConfig
    from tuner.budget.kv_budget import KVBudget

NULL_BLOCKS = 1  # vLLM v1's BlockPool keeps one block aside (its null block): usable = num_gpu_blocks − 1


@dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    prefix_caching: bool
    num_blocks: int  # usable KV blocks
    block_size: int  # tokens per block
    max_model_len: int
    kv_bytes_per_token: int  # all layers, one GPU (what decode attention reads per context token)

    def __post_init__(self) -> None:
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(
                f"max_num_batched_tokens {self.max_num_batched_tokens} < max_num_seqs {self.max_num_seqs}: "
                "vLLM refuses such a configuration"
            )

    @classmethod
    def of(cls, config: ServeConfig, budget: KVBudget, num_gpu_blocks: int | None = None) -> EngineConfig:
        """``config`` launched with ``budget`` (its limits as resolved, vLLM's defaults included);
        ``num_gpu_blocks``: the count vLLM reported, when known, instead of the budget's prediction."""
        blocks = num_gpu_blocks if num_gpu_blocks is not None else budget.num_blocks
        return cls(
            max_num_seqs=budget.max_num_seqs,
            max_num_batched_tokens=budget.max_num_batched_tokens,
            chunked_prefill=config.enable_chunked_prefill is not False,  # vLLM v1: on unless turned off
            prefix_caching=config.enable_prefix_caching is not False,  # likewise
            num_blocks=max(1, blocks - NULL_BLOCKS),
            block_size=budget.block_size,
            max_model_len=budget.max_model_len,
            kv_bytes_per_token=budget.kv_bytes_per_token,
        )

    def with_blocks(self, num_gpu_blocks: int) -> EngineConfig:
        return replace(self, num_blocks=max(1, num_gpu_blocks - NULL_BLOCKS))
