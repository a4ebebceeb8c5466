"""vLLM v1's KV block pool reduced to counts: blocks in use, and the free blocks still holding cached
prompt blocks, in the order vLLM evicts them (``v1/core/block_pool.py``, ``kv_cache_manager.py``).

vLLM keeps every free block in one FIFO queue: allocation takes from its head (a never-used block, or
evicts the oldest cached one), a finished or preempted request's blocks go to its tail in reverse
order (its last block is evicted first), and a prefix-cache hit takes the hit blocks out of the queue
("touch"). Only full blocks carry a hash, so a request's cached blocks are its first ``n`` full
blocks; the queue is kept here as segments ``key -> count`` in queue order, where ``key`` names a
prompt and anonymous segments (never-used or unhashed blocks) get negative keys.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Hashable


class BlockPool:
    """``free`` blocks = ``total`` − ``used``; ``hit_tokens`` = how much of a prompt the free queue still holds."""

    def __init__(self, total: int, block_size: int, caching: bool) -> None:
        if total < 1 or block_size < 1:
            raise ValueError(f"a block pool needs blocks and a block size, got {total} x {block_size}")
        self.total = total
        self.block_size = block_size
        self.caching = caching
        self.used = 0
        self.peak_used = 0  # the most blocks ever in use at once (a level resets it to ``used``)
        self._ids = itertools.count()
        self._queue: OrderedDict[int, int] = OrderedDict({next(self._ids): total})  # segment -> blocks
        self._segment: dict[Hashable, int] = {}  # prompt key -> its segment in the queue

    @property
    def free(self) -> int:
        return self.total - self.used

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def hit_tokens(self, key: Hashable, num_tokens: int) -> int:
        """Tokens of a request of ``num_tokens`` the prefix cache already holds: whole cached blocks, at
        most ``num_tokens − 1`` (vLLM always computes the last token)."""
        seg = self._segment.get(key)
        cached = 0 if seg is None else self._queue.get(seg, 0)
        if seg is not None and not cached:  # evicted since: forget it
            del self._segment[key]
        return min(cached, (num_tokens - 1) // self.block_size) * self.block_size

    def allocate(self, key: Hashable, hit_blocks: int, blocks: int) -> bool:
        """Give a request ``blocks`` in all, ``hit_blocks`` of them its own cached ones; False (and nothing
        changes) when the free blocks do not suffice."""
        if blocks > self.free:
            return False
        if hit_blocks:
            self._touch(key, hit_blocks)
        self.used += blocks
        self.peak_used = max(self.peak_used, self.used)
        self._evict(blocks - hit_blocks)
        return True

    def grow(self, blocks: int) -> bool:
        """More blocks for running requests (decode steps crossing a block boundary)."""
        if blocks > self.free:
            return False
        self.used += blocks
        self.peak_used = max(self.peak_used, self.used)
        self._evict(blocks)
        return True

    def release(self, key: Hashable, blocks: int, computed_tokens: int) -> None:
        """A request gives back its ``blocks``; its full computed blocks stay cached under ``key``."""
        self.used -= blocks
        full = min(blocks, computed_tokens // self.block_size) if self.caching else 0
        self._segment.pop(key, None)  # an older copy of the same prompt stays in the queue, unnamed
        if blocks - full:
            self._queue[next(self._ids)] = blocks - full
        if full:
            seg = next(self._ids)
            self._queue[seg] = full
            self._segment[key] = seg

    def _touch(self, key: Hashable, hit_blocks: int) -> None:
        """Take a prompt's first ``hit_blocks`` out of the free queue; its other blocks stay, unnamed."""
        seg = self._segment.pop(key)
        rest = self._queue[seg] - hit_blocks
        if rest:
            self._queue[seg] = rest
        else:
            del self._queue[seg]

    def _evict(self, n: int) -> None:
        """Take ``n`` blocks from the head of the free queue (evicting what they cached)."""
        while n > 0:
            seg, count = next(iter(self._queue.items()))
            if count > n:
                self._queue[seg] = count - n
                return
            del self._queue[seg]
            n -= count
