"""TrialContext: everything a trial needs besides its configuration, and the configuration it starts.

The context is built once per run (tuner.tune_setup.trial_context) and shared by every trial, the
re-measurements, the certifying soaks and the nightly verification. Its seams are injected: the launcher
(a vLLM process unless given), the measuring function (tuner.trial.measuring unless given), the device
rules of the scheduler that runs the trials, the best goodput so far and the wall clock.
"""

from __future__ import annotations

import functools
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from launch.config import ServeConfig
from loadtest.slo import SLO
from loadtest.spec import LoadSpec
from loadtest.workload import Workload
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_budget import emulated_gmu
from tuner.budget.vllm_defaults import effective
from tuner.model.spec import ModelSpec
from tuner.trial.capacity import CapacityResult, MeasurePlan
from tuner.trial.device_rules import DeviceRules
from tuner.trial.launcher import Launcher, VllmLauncher
from tuner.trial.level import Level

# On the cpu profile the load generator shares the cores with the server it measures, and vLLM's engine
# busy-polls for work: at equal priority the generator waited behind it (docs/loadtest.md). So trials
# on the cpu profile run the server at this niceness.
CPU_SERVER_NICE = 10


class Measure(Protocol):
    """Measures the server at ``url`` serving ``config``: levels reported to ``on_level``; ``hopeless``
    judges the probe's throughput; ``plan`` fitted to what the server runs at once; ``fresh`` (None: never)
    replaces the server after a lost level and returns its URL."""

    def __call__(
        self,
        url: str,
        config: ServeConfig,
        ctx: TrialContext,
        number: int,
        on_level: Callable[[Level], None],
        hopeless: Callable[[float], str | None] | None = None,
        plan: MeasurePlan | None = None,
        fresh: Callable[[], str] | None = None,
    ) -> CapacityResult: ...


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
    actual_gpu: GPUProfile | None = None  # the larger device emulating ``gpu``'s memory: its speed is what runs
    startup_timeout_s: float = 900.0
    env: Mapping[str, str] = field(default_factory=dict)
    output_tokens: int | None = None
    server_nice: int = 0  # CPU_SERVER_NICE on the cpu profile
    # what starts a server (None: a vLLM process of ``python``) and what measures it (None: measure_capacity)
    launcher: Launcher | None = field(default=None, compare=False)
    measure: Measure | None = field(default=None, compare=False)
    # the scheduler's rules for the device a trial runs on: start and measurement locks, the time budget
    rules: DeviceRules = field(default_factory=DeviceRules, compare=False)
    # the study's best capacity so far (None: none yet, or no study: re-measurements are never cut short)
    best_capacity: Callable[[], float | None] = field(default=lambda: None, compare=False)
    # each trial's timeline (tuner.report.company): wall-clock seconds, comparable between the trials of one host
    wall_clock: Callable[[], float] = field(default=time.time, compare=False)
    host: str = field(default_factory=socket.gethostname)

    @property
    def speed_gpu(self) -> GPUProfile:
        """The device whose speed the servers run at: the emulating one where ``gpu``'s memory is emulated."""
        return self.actual_gpu or self.gpu

    def uncut(self) -> TrialContext:
        """The context of a re-measurement or a soak: never cut short, neither as hopeless nor by the budget."""
        return replace(self, best_capacity=lambda: None, rules=self.rules.without_budget())


def launcher_of(ctx: TrialContext) -> Launcher:
    """The context's launcher, or a vLLM process of its interpreter."""
    if ctx.launcher is not None:
        return ctx.launcher
    return VllmLauncher(ctx.python, ctx.startup_timeout_s, ctx.plan.warmup_requests, ctx.server_nice)


def load_spec(ctx: TrialContext, url: str, config: ServeConfig, seed: int, **kw: Any) -> LoadSpec:
    """A load against a trial's server: the study's workload, SLOs, tokenizer and output length, ``seed``'s
    prompts; ``kw`` says how (rate or concurrency, how many, how long)."""
    return LoadSpec(
        url=url,
        model=config.name,
        workload=ctx.workload,
        slos=ctx.slos,
        tokenizer=ctx.tokenizer,
        output_tokens=ctx.output_tokens,
        seed=seed,
        measure_host_cpu=launcher_of(ctx).server_in_tree,
        **kw,
    )


def launched_config(config: ServeConfig, ctx: TrialContext, device: str | None = None) -> ServeConfig:
    """The config really started: with memory emulation, gmu is rescaled so that vLLM's budget
    (total × gmu) equals the emulated GPU's, and the batch limits vLLM would pick on the emulated GPU
    (its defaults depend on device memory) are pinned. Speed is not emulated. ``device``: pinned to it."""
    if ctx.actual_gpu is not None and not ctx.gpu.is_cpu:
        eff = effective(config, ctx.gpu, ctx.vllm_version)
        gmu = emulated_gmu(ctx.gpu, ctx.actual_gpu.memory_bytes, eff.gpu_memory_utilization)
        config = replace(
            config,
            gpu_memory_utilization=round(gmu, 4),
            max_num_seqs=eff.max_num_seqs,
            max_num_batched_tokens=eff.max_num_batched_tokens,
        )
    return config if device is None else config.with_env(CUDA_VISIBLE_DEVICES=device)


def spec_of(config: ServeConfig, ctx: TrialContext) -> ModelSpec:
    """The shape of the model ``config`` serves: the context's, or, when ``config.model`` is another
    directory (the quantized variant searched as a knob), that directory's: a 4-bit variant's weights are
    a third of the 16-bit model's, so its KV budget differs by far (docs/budget.md, the a30-w4a16 study)."""
    source = Path(ctx.spec.source)
    if not source.is_file():  # a spec built from a dict (tests): no directory to tell variants apart
        return ctx.spec
    if Path(config.model).resolve() in (source.resolve(), source.resolve().parent):
        return ctx.spec
    return _spec_of_dir(str(Path(config.model).resolve()))


@functools.lru_cache(maxsize=8)
def _spec_of_dir(path: str) -> ModelSpec:
    return ModelSpec.from_dir(path)
