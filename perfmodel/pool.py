"""The model's simulations spread over the machine's cores. Each candidate's prediction, and each level a
calibration replays, is independent of the others; on the H200 test machine (16 cores) a ranking of 56
configurations on one core took 58 s (results/h200-llama-3-8b-a30-predict-2026-12-02-b).

Processes are spawned, not forked: the tuner holds threads (Optuna's storage, the load generator's loop) that
a fork would copy in whatever state they were. Results come back in the items' order, so a parallel answer is
the serial one."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def worker_count(workers: int | None, tasks: int) -> int:
    """``workers`` (None: every usable core), never more than there are tasks, at least 1."""
    wanted = usable_cores() if workers is None else workers
    if wanted < 1:
        raise ValueError(f"workers must be at least 1, not {wanted}")
    return max(1, min(wanted, tasks))


@contextmanager
def process_pool(
    workers: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> Iterator[Executor | None]:
    """A pool of ``workers`` spawned processes (each run ``initializer(*initargs)`` once), or None for one
    worker: the caller then runs its tasks in this process."""
    if workers <= 1:
        yield None
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=initializer, initargs=initargs) as pool:
        yield pool


def parallel_map(fn: Callable[[T], R], items: Iterable[T], workers: int | None = None) -> list[R]:
    """``[fn(x) for x in items]`` over ``workers`` processes (None: every usable core); ``fn`` and the items
    must pickle (module-level functions, frozen records)."""
    todo: Sequence[T] = list(items)
    with process_pool(worker_count(workers, len(todo))) as pool:
        if pool is None:
            return [fn(x) for x in todo]
        return list(pool.map(fn, todo))
