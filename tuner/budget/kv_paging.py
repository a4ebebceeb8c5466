"""How vLLM pages the KV cache (kv_cache_utils): blocks per pool, one pool per group of layers that share
a page size, sliding-window groups holding only their window. Pure arithmetic on a ModelSpec."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tuner.model.spec import ModelSpec


@dataclass(frozen=True)
class Paging:
    """How vLLM lays KV blocks out for this model: ``bytes_per_block`` of one block across the layers
    that share a pool, and per group the kind of attention (full, or a sliding window)."""

    bytes_per_block: int
    block_size: int
    groups: tuple[int | None, ...]  # one entry per KV-cache group: None = full attention, else its window
    max_in_flight: int

    @classmethod
    def of(cls, spec: ModelSpec, kv_dtype: str, tp: int, block: int, max_in_flight: int) -> Paging:
        page = block * spec.kv_bytes_per_token_layer(kv_dtype, tp)
        kinds = [None if t == "full_attention" else spec.sliding_window for t in spec.layer_types]
        if len(set(kinds)) == 1:  # one group holding every layer
            return cls(page * spec.num_layers, block, (kinds[0],), max_in_flight)
        counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
        group = min(counts.values())
        if max(counts.values()) < 1.5 * group:
            group = max(counts.values())
        groups: list[int | None] = []
        for kind, n in counts.items():
            groups += [kind] * math.ceil(n / group)
        return cls(page * group, block, tuple(groups), max_in_flight)

    def blocks_per_request(self, max_len: int) -> int:
        total = 0
        for window in self.groups:
            if window is None:
                total += math.ceil(max_len / self.block_size)
            else:  # SlidingWindowSpec.max_admission_blocks_per_request
                total += math.ceil(min(window - 1 + self.max_in_flight, max_len) / self.block_size) + 1
        return total

    def max_len_fitting(self, kv_bytes: int, upper: int) -> int:
        """Largest max_model_len (≤ upper) whose one request fits in ``kv_bytes``; 0 when none."""
        lo, hi, best = 1, upper, 0
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.blocks_per_request(mid) * self.bytes_per_block <= kv_bytes:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best
