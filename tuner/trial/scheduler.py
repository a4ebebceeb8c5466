"""The scheduler: runs jobs (trials, re-measurements) on the device slots of one host.

``Scheduler.run(next_job, ended)`` asks for a job whenever a slot is free, runs it on a thread pool with the
slot's device and hands each outcome to ``ended`` in the calling thread (so the study is asked and told from
one thread only). Its rules:
- one job per slot: a slot is a device, listed twice when startups overlap (device_rules keeps one
  startup and one measurement at a time on it);
- a job marked ``alone`` (vLLM's defaults, against which every gain is stated) starts once the others have
  ended, and nothing starts beside it: measured while other servers started on the host it came out low
  (results/README.md, "Measured while other servers start, the defaults come out low");
- the time budget: no new job once a typical (median) job would overrun what is left; a job that raises
  OverBudget (its measurement would overrun it) is an outcome, and no new job starts either;
- one slot: the job runs in the calling thread, so Ctrl-C reaches it directly and it stops its server.
  With several, Ctrl-C or a bug in one job cancels the others (device_rules.Cancel), which end at their
  next progress line with their servers stopped, before the exception goes on.
``all_at_once(jobs)`` runs a few jobs at once and returns their results in order (``--confirm``'s rounds).
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from tuner.trial.device_rules import DeviceRules
from tuner.trial.time_budget import OverBudget, TimeBudget

T = TypeVar("T")
log = logging.getLogger("slotune")


@dataclass(frozen=True, eq=False)
class Job(Generic[T]):
    """``run(device)`` on a free slot's device; ``alone``: no other job runs beside it."""

    run: Callable[[str | None], T]
    alone: bool = False


@dataclass(frozen=True, eq=False)
class Done(Generic[T]):
    """A job's outcome: its result, or the OverBudget it raised; how long it ran."""

    job: Job[T]
    result: T | None
    over_budget: OverBudget | None
    seconds: float


@dataclass
class _Pass(Generic[T]):
    """One ``run``'s state: the slots free and busy, an alone job waiting for the others, the budget stop."""

    free: list[str | None]
    busy: dict[Future[Done[T]], tuple[Job[T], str | None]] = field(default_factory=dict)
    waiting: Job[T] | None = None
    asking: bool = True
    stopped: bool = False
    durations: list[float] = field(default_factory=list)


class Scheduler:
    """Jobs on ``slots`` (devices; None: the default one) under ``rules`` (shared with the trials' context)."""

    def __init__(self, slots: Sequence[str | None] = (None,), rules: DeviceRules | None = None) -> None:
        if not slots:
            raise ValueError("a scheduler needs at least one slot (None: the default device)")
        self.slots = list(slots)
        self.rules = rules or DeviceRules()

    @classmethod
    def for_devices(
        cls,
        devices: list[str | None],
        *,
        overlap: bool = False,
        layouts: bool = False,
        budget: TimeBudget | None = None,
    ) -> Scheduler:
        """A run on ``devices``: with ``overlap`` two slots per device (one starting while one is measured)."""
        rules = DeviceRules.of(devices, overlap=overlap, layouts=layouts, budget=budget)
        return cls([d for d in devices for _ in (0, 1)] if overlap else devices, rules)

    def on(self, slots: Sequence[str | None]) -> Scheduler:
        """The same rules on other slots (one trial at a time on the first device, say)."""
        return Scheduler(slots, self.rules)

    def run(self, next_job: Callable[[], Job[T] | None], ended: Callable[[Done[T]], None]) -> None:
        """Run jobs until ``next_job`` returns None or the budget stops them; ``ended`` gets each outcome."""
        state: _Pass[T] = _Pass(list(self.slots))
        if len(self.slots) == 1:
            while not state.stopped and (job := next_job()) is not None:
                self._ended(state, _timed(job, self.slots[0]), ended)
            return
        with ThreadPoolExecutor(len(self.slots), thread_name_prefix="trial") as pool:
            try:
                while self._fill(state, next_job, pool):
                    done, _ = wait(state.busy, timeout=0.5, return_when=FIRST_COMPLETED)
                    for future in done:
                        state.free.append(state.busy.pop(future)[1])
                        self._ended(state, future.result(), ended)  # a job's bug is raised here
            except BaseException:
                self.rules.cancel.set()  # the others end at their next progress line; the pool waits for them
                raise

    def _fill(self, state: _Pass[T], next_job: Callable[[], Job[T] | None], pool: ThreadPoolExecutor) -> bool:
        """Start jobs on the free slots; False when nothing runs and nothing more will."""
        while state.asking and state.waiting is None and state.free and not state.stopped:
            if any(job.alone for job, _ in state.busy.values()):
                break
            job = next_job()
            if job is None:
                state.asking = False
            elif job.alone and state.busy:
                state.waiting = job  # starts once the others have ended
            else:
                self._submit(state, job, pool)
        if state.waiting is not None and not state.busy and not state.stopped:
            self._submit(state, state.waiting, pool)
            state.waiting = None
        return bool(state.busy)

    @staticmethod
    def _submit(state: _Pass[T], job: Job[T], pool: ThreadPoolExecutor) -> None:
        slot = state.free.pop(0)
        state.busy[pool.submit(_timed, job, slot)] = (job, slot)

    def _ended(self, state: _Pass[T], done: Done[T], ended: Callable[[Done[T]], None]) -> None:
        ended(done)
        if done.over_budget is not None:
            state.stopped = True
            return
        state.durations.append(done.seconds)
        # the median: the first jobs' cold start (compile caches) and queueing for a start lock would make
        # a mean stop a run minutes early
        budget = self.rules.budget
        if budget is not None and not state.stopped and statistics.median(state.durations) > budget.left():
            log.warning("time budget of %.0f s nearly spent: no new trial starts (resume to continue)", budget.seconds)
            state.stopped = True

    def all_at_once(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Run ``jobs`` at once (each knows its device) and return their results in order, once all have
        ended; a job's bug is raised then. Ctrl-C cancels the others. One job runs in this thread."""
        if len(jobs) == 1:
            return [jobs[0]()]
        with ThreadPoolExecutor(len(jobs), thread_name_prefix="remeasure") as pool:
            futures = [pool.submit(job) for job in jobs]
            try:
                while wait(futures, timeout=0.5).not_done:
                    pass
            except BaseException:
                self.rules.cancel.set()
                raise
        return [f.result() for f in futures]


def _timed(job: Job[T], device: str | None) -> Done[T]:
    """Run ``job`` on ``device``; OverBudget is its outcome, anything else it raises goes on."""
    t0 = time.monotonic()
    try:
        result = job.run(device)
    except OverBudget as over:
        return Done(job, None, over, time.monotonic() - t0)
    return Done(job, result, None, time.monotonic() - t0)
