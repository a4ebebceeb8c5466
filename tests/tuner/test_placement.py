"""Placement on several GPUs with fakes: disjoint groups, side by side, first come first served, and one
server starting at a time per GPU (tuner.trial.placement)."""

from __future__ import annotations

import threading
import time

import pytest

from tuner.errors import UsageError
from tuner.trial.placement import GpuPool, GroupStartLocks, placed


def test_groups_are_disjoint_and_in_listed_order() -> None:
    pool = GpuPool(["0", "1", "2", "3"])
    assert pool.take(2) == ("0", "1")
    assert pool.take(1) == ("2",)
    pool.give(("0", "1"))
    assert pool.take(2) == ("0", "1")  # the lowest free ones again
    assert pool.take(1) == ("3",)


def test_a_layout_larger_than_the_host_is_one_line() -> None:
    with pytest.raises(UsageError, match="a layout of 8 GPUs does not fit --devices 0,1 \\(2 GPUs\\)"):
        GpuPool(["0", "1"]).take(8)
    with pytest.raises(UsageError, match="listed twice"):
        GpuPool(["0", "0"])


def test_trials_that_fit_run_side_by_side_and_the_rest_wait() -> None:
    pool = GpuPool(["0", "1", "2", "3"])
    running: dict[str, str] = {}  # trial -> its group while it runs
    overlaps: list[tuple[str, str]] = []
    lock = threading.Lock()

    def trial(name: str, gpus: int, hold: float) -> None:
        with pool.group(gpus) as group:
            with lock:
                for other, g in running.items():
                    assert not set(g.split(",")) & set(group.split(",")), (name, group, other, g)
                    overlaps.append((name, other))
                running[name] = group
            time.sleep(hold)
            with lock:
                del running[name]

    threads = [
        threading.Thread(target=trial, args=("a", 2, 0.3)),
        threading.Thread(target=trial, args=("b", 2, 0.3)),
    ]
    for t in threads:
        t.start()
    time.sleep(0.05)
    late = threading.Thread(target=trial, args=("c", 4, 0.05))  # needs the whole host: waits for a and b
    late.start()
    for t in [*threads, late]:
        t.join(timeout=10)
    assert ("b", "a") in overlaps or ("a", "b") in overlaps  # two 2-GPU trials side by side
    assert not any("c" in pair for pair in overlaps)


def test_a_large_request_is_not_overtaken_by_later_small_ones() -> None:
    pool = GpuPool(["0", "1"])
    first = pool.take(1)
    order: list[str] = []
    big = threading.Thread(target=lambda: (pool.take(2), order.append("big")))
    big.start()
    time.sleep(0.05)
    small = threading.Thread(target=lambda: (pool.take(1), order.append("small")))
    small.start()
    time.sleep(0.1)
    assert order == []  # GPU 1 is free, but the older 2-GPU request is at the head of the queue
    pool.give(first)
    big.join(timeout=5)
    assert order == ["big"]
    pool.give(("0", "1"))
    small.join(timeout=5)
    assert order == ["big", "small"]


def test_start_locks_hold_every_gpu_of_the_group() -> None:
    locks = GroupStartLocks(["0", "1", "2"])
    with locks["1,0"]:
        assert locks.locks["0"].locked() and locks.locks["1"].locked() and not locks.locks["2"].locked()
        started = threading.Event()

        def other() -> None:
            with locks["1,2"]:  # shares GPU 1: waits for the startup above
                started.set()

        t = threading.Thread(target=other)
        t.start()
        assert not started.wait(0.2)
        assert locks.get(None) is None and len(locks) == 3
    t.join(timeout=5)
    assert started.is_set()


def test_without_a_pool_the_trial_keeps_its_device() -> None:
    with placed(None, 1, "3") as where:
        assert where == "3"
    pool = GpuPool(["4", "5"])
    with placed(pool, 2, None) as where:
        assert where == "4,5"
    assert pool.take(2) == ("4", "5")  # given back
