"""Placement of trials on the GPUs of one host: each trial takes the GPU group its layout needs.

``GpuPool`` hands out disjoint groups of the listed GPUs, first come first served (a trial that needs
four GPUs is not starved by later one-GPU trials: nobody overtakes the head of the queue), so trials that
fit run side by side. ``GroupStartLocks`` keeps the one-startup-at-a-time rule per GPU: a server starting
on a group holds the start lock of every GPU in it (taken in a fixed order, so two groups never deadlock),
since vLLM's memory profiling reads each device's free memory.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence

from tuner.errors import UsageError


class GpuPool:
    """The GPUs of ``devices`` (CUDA indices as strings), handed out in disjoint groups."""

    def __init__(self, devices: Sequence[str]) -> None:
        if len(set(devices)) != len(devices):
            raise UsageError(f"--devices {','.join(devices)}: a GPU is listed twice; list each GPU once")
        self.devices = tuple(devices)
        self._free = list(devices)
        self._queue: list[int] = []  # tickets of waiting requests, oldest first
        self._tickets = 0
        self._cond = threading.Condition()

    def take(self, n: int, check: Callable[[], None] | None = None) -> tuple[str, ...]:
        """Block until ``n`` GPUs are free and this request is the oldest waiting; returns them in the
        order listed (CUDA_VISIBLE_DEVICES of the group). ``check`` may raise to stop waiting (the run stops)."""
        if not 1 <= n <= len(self.devices):
            raise UsageError(
                f"a layout of {n} GPUs does not fit --devices {','.join(self.devices)} "
                f"({len(self.devices)} GPUs); list at least {n} GPUs or choose a smaller layout"
            )
        with self._cond:
            ticket = self._tickets
            self._tickets += 1
            self._queue.append(ticket)
            while self._queue[0] != ticket or len(self._free) < n:
                self._wait(ticket, check)
            self._queue.pop(0)
            group = tuple(d for d in self.devices if d in self._free[:n])
            self._free = self._free[n:]
            self._cond.notify_all()
            return group

    def _wait(self, ticket: int, check: Callable[[], None] | None) -> None:
        if check is None:
            self._cond.wait()
            return
        try:
            check()
        except BaseException:
            self._queue.remove(ticket)  # the next in the queue may go now
            self._cond.notify_all()
            raise
        self._cond.wait(timeout=0.5)

    def give(self, group: Sequence[str]) -> None:
        """Return ``group``; the free list stays in the listed order, so groups are as low-numbered as free."""
        with self._cond:
            self._free = [d for d in self.devices if d in self._free or d in group]
            self._cond.notify_all()

    @contextlib.contextmanager
    def group(self, n: int, check: Callable[[], None] | None = None) -> Iterator[str]:
        """``n`` GPUs for the duration of the block, as a CUDA_VISIBLE_DEVICES value ("2,3")."""
        taken = self.take(n, check)
        try:
            yield ",".join(taken)
        finally:
            self.give(taken)


class GroupStartLocks(Mapping[str | None, contextlib.AbstractContextManager[object]]):
    """``start_locks`` for tuner.trial.device_rules keyed by a group ("0,1"): the start lock of each of its GPUs."""

    def __init__(self, devices: Sequence[str]) -> None:
        self.locks = {d: threading.Lock() for d in devices}

    def __getitem__(self, group: str | None) -> contextlib.AbstractContextManager[object]:
        if group is None:
            raise KeyError(group)
        order = list(self.locks)
        return _all_of([self.locks[d] for d in sorted(group.split(","), key=order.index)])

    def __iter__(self) -> Iterator[str | None]:
        return iter(self.locks)

    def __len__(self) -> int:
        return len(self.locks)


@contextlib.contextmanager
def _all_of(locks: Sequence[threading.Lock]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for lock in locks:
            stack.enter_context(lock)
        yield


def placed(
    pool: GpuPool | None, gpus: int, device: str | None, check: Callable[[], None] | None = None
) -> contextlib.AbstractContextManager[str | None]:
    """Where one trial runs: with a pool, a group of ``gpus`` GPUs from it (held for the block); without
    one, ``device`` (one trial per listed GPU, or the default device)."""
    if pool is None:
        return contextlib.nullcontext(device)
    return pool.group(gpus, check)
