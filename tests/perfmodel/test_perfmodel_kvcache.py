"""perfmodel.kvcache: vLLM's free-block queue reduced to counts (allocation from the head, release to the
tail last block first, hits on a prompt's first full blocks, the last token always computed)."""

from __future__ import annotations

import pytest

from perfmodel.kvcache import BlockPool


def test_released_full_blocks_are_hit_but_never_the_last_token():
    pool = BlockPool(10, 16, caching=True)
    assert pool.allocate("a", 0, 5)
    pool.release("a", 5, computed_tokens=80)  # 5 full blocks computed
    assert pool.used == 0 and pool.free == 10
    assert pool.hit_tokens("a", 100) == 80
    assert pool.hit_tokens("a", 81) == 80
    assert pool.hit_tokens("a", 80) == 64  # a prompt fully cached still computes its last token
    assert pool.hit_tokens("b", 100) == 0


def test_a_partial_last_block_is_not_cached():
    pool = BlockPool(10, 16, caching=True)
    pool.allocate("a", 0, 3)
    pool.release("a", 3, computed_tokens=40)  # 2 full blocks + 8 tokens
    assert pool.hit_tokens("a", 1000) == 32


def test_allocation_evicts_never_used_blocks_first_then_the_oldest_last_block_first():
    pool = BlockPool(10, 16, caching=True)
    pool.allocate("a", 0, 4)
    pool.allocate("b", 0, 4)
    pool.release("a", 4, 64)
    pool.release("b", 4, 64)
    assert pool.allocate("c", 0, 5)  # 2 never-used blocks, then 3 of a's (its last ones)
    assert pool.hit_tokens("a", 1000) == 16
    assert pool.hit_tokens("b", 1000) == 64


def test_a_hit_takes_its_blocks_out_of_the_free_queue():
    pool = BlockPool(8, 16, caching=True)
    pool.allocate("a", 0, 4)
    pool.release("a", 4, 64)
    hit = pool.hit_tokens("a", 70) // 16
    assert hit == 4
    assert pool.allocate("a", hit, 5)  # 4 cached + 1 new
    assert pool.used == 5 and pool.free == 3
    assert pool.hit_tokens("a", 70) == 0  # in use now, not in the free queue
    assert not pool.allocate("x", 0, 4)  # only 3 free
    assert pool.used == 5


def test_without_caching_nothing_is_hit():
    pool = BlockPool(8, 16, caching=False)
    pool.allocate("a", 0, 4)
    pool.release("a", 4, 64)
    assert pool.hit_tokens("a", 100) == 0


def test_growth_beyond_the_free_blocks_fails_and_changes_nothing():
    pool = BlockPool(4, 16, caching=True)
    assert pool.grow(4)
    assert not pool.grow(1)
    assert pool.used == 4


def test_an_empty_pool_is_refused():
    with pytest.raises(ValueError, match="blocks"):
        BlockPool(0, 16, caching=True)
