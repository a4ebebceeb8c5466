"""The rules a trial keeps on its device, set by the scheduler that runs it (tuner.trial.scheduler).

- One startup at a time per device: vLLM profiles its memory from device-wide free memory, so a server
  that starts or stops meanwhile corrupts its KV budget or aborts it ("Error in memory profiling").
  With overlapped startups, one measurement at a time per device too (a startup may overlap one).
- With layouts of several GPUs, each trial takes a group of GPUs from the pool (tuner.trial.placement).
- The time budget's gate before a measurement (tuner.trial.time_budget): one that would overrun it is given up.
- Cancelling: when the run stops (Ctrl-C, or a bug in another trial), a trial in another thread ends at
  its next progress line (``Cancelled``) and every server it holds is stopped at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from tuner.trial.placement import GpuPool, GroupStartLocks, placed
from tuner.trial.time_budget import OverBudget, TimeBudget


class Cancelled(BaseException):
    """The run is stopping: a trial of another thread ends here. Not an Exception: no handler of failures
    may swallow it (it is a state of the run, like KeyboardInterrupt, not a bug)."""


class _Stoppable(Protocol):
    def stop(self) -> None: ...


class Cancel:
    """Set once, when the run stops: stops every server held at that moment; a trial that would hold one
    later, or says anything more, ends at once."""

    def __init__(self) -> None:
        self._set = threading.Event()
        self._lock = threading.Lock()
        self._held: list[_Stoppable] = []

    def set(self) -> None:
        with self._lock:
            self._set.set()
            held, self._held = self._held, []
        for server in held:
            server.stop()

    def is_set(self) -> bool:
        return self._set.is_set()

    def check(self) -> None:
        if self._set.is_set():
            raise Cancelled("the run is stopping")

    def checked(self, progress: Callable[[str], None]) -> Callable[[str], None]:
        """``progress`` that first ends the trial when the run is stopping."""

        def say(message: str) -> None:
            self.check()
            progress(message)

        return say

    @contextlib.contextmanager
    def holding(self, server: _Stoppable) -> Iterator[None]:
        """While the block runs, ``server`` is stopped as soon as the run stops."""
        with self._lock:
            self._held.append(server)
        try:
            self.check()
            yield
        finally:
            with self._lock:
                if server in self._held:
                    self._held.remove(server)


@dataclass(frozen=True)
class DeviceRules:
    """Per device (a CUDA index, a group "0,1", or None for the default one): its locks, the GPU pool, the
    time budget and the run's Cancel. The default has none of them: trials one after another."""

    start_locks: Mapping[str | None, contextlib.AbstractContextManager[object]] = field(default_factory=dict)
    measure_locks: Mapping[str | None, threading.Lock] = field(default_factory=dict)
    pool: GpuPool | None = None
    budget: TimeBudget | None = None
    cancel: Cancel = field(default_factory=Cancel)

    @classmethod
    def of(cls, devices: list[str | None], *, overlap: bool, layouts: bool, budget: TimeBudget | None) -> DeviceRules:
        """The rules of a run on ``devices``: two trials per device with ``overlap`` (locks keep one startup
        and one measurement at a time), or GPU groups from a pool for searched ``layouts``."""
        if overlap:
            return cls({d: threading.Lock() for d in devices}, {d: threading.Lock() for d in devices}, budget=budget)
        if layouts:
            pool = GpuPool([d for d in devices if d is not None])
            return cls(GroupStartLocks(pool.devices), pool=pool, budget=budget)
        return cls(budget=budget)

    def without_budget(self) -> DeviceRules:
        return replace(self, budget=None)

    def starting(self, device: str | None) -> contextlib.AbstractContextManager[object]:
        """Held while a server on ``device`` starts or stops: no other startup there meanwhile."""
        return self.start_locks.get(device) or contextlib.nullcontext()

    @contextlib.contextmanager
    def measuring(
        self, device: str | None, progress: Callable[[str], None], timeline: dict[str, Any]
    ) -> Iterator[None]:
        """Held while a server on ``device`` is measured. Raises OverBudget (with the trial's ``timeline``)
        when a measurement starting now would overrun the time budget."""
        lock = self.measure_locks.get(device)
        if lock is not None:
            progress("started; waiting for the device to be free of measurements")
        with lock or contextlib.nullcontext():
            if self.budget is not None and (why := self.budget.overrun()):
                progress(why)
                raise OverBudget(why, timeline)  # the study keeps the timeline: its server was up
            with self.budget.measuring() if self.budget is not None else contextlib.nullcontext():
                yield

    def placed(self, gpus: int, device: str | None) -> contextlib.AbstractContextManager[str | None]:
        """Where one server runs: a group of ``gpus`` GPUs from the pool (held for the block), else ``device``."""
        return placed(self.pool, gpus, device, self.cancel.check)
