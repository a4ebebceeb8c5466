"""What one ``tune`` run is built from its Inputs: the base configuration, the search space's context, the
trials' context, the scheduler of its devices, the study's storage and the metadata every output carries."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import optuna

from launch.config import ServeConfig
from launch.fingerprint import model_fingerprint
from tuner.inputs import Inputs, measure_plan
from tuner.layout import searched_layouts
from tuner.search.families import CALIBRATES_ATTR, launched_family
from tuner.search.progress import Progress
from tuner.search.space import SpaceContext, suggest_config
from tuner.search.study import STUDY_NAME, storage_for
from tuner.search.study_identity import check_same_study, study_defines
from tuner.settings.tune_settings import TuneSettings
from tuner.study_outputs import StudyOutputs
from tuner.trial.context import CPU_SERVER_NICE, TrialContext
from tuner.trial.result import PREDICTED, Predicted, TrialResult
from tuner.trial.scheduler import Scheduler
from tuner.trial.time_budget import TimeBudget


class TrialRunner(Protocol):
    """tuner.trial.runner.run_trial, or a stand-in (tests)."""

    def __call__(
        self,
        number: int,
        config: ServeConfig,
        is_baseline: bool,
        ctx: TrialContext,
        progress: Callable[[str], None],
        device: str | None = None,
    ) -> TrialResult: ...


def base_config(inp: Inputs) -> ServeConfig:
    """vLLM's defaults for the model: what the baseline trial runs and every suggestion starts from."""
    s = inp.settings
    cfg = ServeConfig(
        model=str(inp.model_dir),
        served_model_name=inp.model_dir.name,
        load_format=s.load_format,
        seed=s.seed,
        dtype=s.dtype,
    )
    if inp.cpu_kv_space_gib:
        cfg = cfg.with_env(VLLM_CPU_KVCACHE_SPACE=inp.cpu_kv_space_gib)
    return cfg


def space_context(inp: Inputs, base: ServeConfig, quantized: str | None) -> SpaceContext:
    variants = {"16bit": base.model, "awq": quantized} if quantized else {}
    flags = inp.vllm.flags
    return SpaceContext(
        base=base,
        min_model_len=inp.workload.max_input_tokens + inp.workload.max_output_tokens,
        model_max_len=inp.spec.max_position_embeddings,
        is_cpu=inp.gpu.is_cpu,
        fp8_kv=inp.gpu.fp8_kv,
        flags=flags,
        variants=variants,
        draft_model=inp.settings.draft_model,
        # several GPUs listed: the parallel layout is searched (tuner.layout); not with overlapped startups
        layouts=() if inp.settings.overlap_startup else searched_layouts(inp.spec, inp.settings.device_list(), flags),
    )


def trial_context(inp: Inputs, log_dir: Path) -> TrialContext:
    """What every trial (and every re-verification) of these inputs needs besides its configuration."""
    s = inp.settings
    return TrialContext(
        spec=inp.spec,
        gpu=inp.gpu,
        slos=inp.slos,
        workload=inp.workload,
        plan=measure_plan(s, inp.gpu),
        python=s.vllm_python,
        log_dir=log_dir,
        vllm_version=inp.vllm.version,
        tokenizer=str(inp.model_dir),
        actual_gpu=inp.actual_gpu,
        startup_timeout_s=s.startup_timeout,
        env=dict(base_config(inp).env),
        output_tokens=s.output_tokens,
        server_nice=CPU_SERVER_NICE if inp.gpu.is_cpu else 0,
    )


def scheduler_of(settings: TuneSettings, sctx: SpaceContext) -> Scheduler:
    """The run's devices: one trial per listed GPU (two with --overlap-startup), GPU groups when layouts are
    searched; one clock for --time-budget."""
    budget = TimeBudget(settings.time_budget) if settings.time_budget else None
    devices = settings.device_list()
    return Scheduler.for_devices(devices, overlap=settings.overlap_startup, layouts=bool(sctx.layouts), budget=budget)


def metadata(
    inp: Inputs, versions: dict[str, Any], fingerprint: str, space_notes: Sequence[str] = ()
) -> dict[str, Any]:
    """What every output carries about the run; ``space_notes``: what the search space left out and why
    (SpaceContext.notes), after the inputs' notes."""
    return {
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "settings": inp.settings.public_dict(),
        "slo": inp.settings.slo,
        "workload": inp.workload.name,
        "gpu": {
            "profile": inp.gpu.name,
            "emulated_on": inp.actual_gpu.name if inp.actual_gpu else None,
            "emulation": "memory only" if inp.actual_gpu else None,
        },
        "model": {"path": str(inp.model_dir), "fingerprint": fingerprint},
        "vllm": {"version": inp.vllm.version, "python": inp.vllm.python},
        "versions": versions,
        "notes": [*inp.notes, *space_notes],
    }


def storage_url(settings: TuneSettings) -> str:
    """--storage, or the study file in the out folder."""
    return settings.storage or f"sqlite:///{settings.out_dir().resolve()}/study.db"


def check_resume(inp: Inputs) -> None:
    """Before any work (quantization, the first trial): a resumed study keeps the settings that define it
    (tuner.search.study_identity). The storage itself is checked earlier (tuner.search.study.check_storage)."""
    if inp.settings.resume:
        study = optuna.load_study(study_name=STUDY_NAME, storage=storage_for(storage_url(inp.settings)))
        check_same_study(study, study_defines(inp, model_fingerprint(inp.model_dir)))


@dataclass(frozen=True)
class TuneRun:
    """A tune run's live parts, as the search and the steps after it use them."""

    inp: Inputs
    study: optuna.Study
    sctx: SpaceContext
    tctx: TrialContext  # its rules are the scheduler's
    scheduler: Scheduler
    progress: Progress
    outputs: StudyOutputs
    run_one: Callable[[optuna.Trial, str | None], TrialResult]  # one asked trial: suggest, place, run


def trial_job(
    base: ServeConfig, sctx: SpaceContext, tctx: TrialContext, progress: Progress, run: TrialRunner
) -> Callable[[optuna.Trial, str | None], TrialResult]:
    """What runs one asked trial on a device: vLLM's defaults for the baseline (with a family's settings for that
    family's first launch under --predict: tuner.search.families), else the suggested config,
    on the GPUs its layout needs (tuner.trial.device_rules), by ``run`` (tuner.trial.runner.run_trial)."""

    def run_one(trial: optuna.Trial, device: str | None) -> TrialResult:
        baseline = bool(trial.user_attrs.get("is_baseline"))
        family = None if baseline else launched_family(base, trial.user_attrs)
        config, what = (
            (base, "baseline (vLLM defaults)") if baseline else (family, "vLLM's defaults with its family's settings ")
        )
        if config is None:
            config, what = suggest_config(trial, sctx), "config "
        say = functools.partial(progress.say, trial=trial.number)
        say(what + str(config.knobs()))
        ctx = seeded_context(tctx, trial.user_attrs, say)
        with tctx.rules.placed(config.gpus, device) as where:
            return run(trial.number, config, baseline, ctx, say, device=where)

    return run_one


def seeded_context(tctx: TrialContext, attrs: dict[str, Any], say: Callable[[str], None]) -> TrialContext:
    """The trial's context: its levels bracket the capacity perfmodel predicted for it (tune --predict enqueued
    it with one: tuner.trial.capacity, the seeded search); where tune --predict launched it unpredicted (an engine
    family not calibrated), its first level is the best capacity so far, unless its levels are to calibrate that
    family (tuner.search.families: measured in full, as the defaults are); else the run's own."""
    stored = attrs.get(PREDICTED)
    if not stored:
        return tctx
    expected = Predicted.from_dict(stored).capacity_req_s
    if expected is None and attrs.get(CALIBRATES_ATTR):
        say("not predicted: measured in full, as the defaults are, to calibrate its engine family")
        return tctx
    if expected is None:
        return _challenged(tctx, say)
    plan = replace(tctx.plan, expected_req_s=expected)
    below, above = plan.seed_rates() or (expected, expected)
    say(f"levels seeded by the prediction: {below:.2f} and {above:.2f} req/s first ({expected:.3f} predicted)")
    return replace(tctx, plan=plan)


def _challenged(tctx: TrialContext, say: Callable[[str], None]) -> TrialContext:
    """An unpredicted launch has only to show it beats the best capacity so far (MeasurePlan.challenge_req_s)."""
    best = tctx.best_capacity()
    if best is None:
        return tctx
    say(f"not predicted: its first level is the best capacity so far, {best:.2f} req/s; a miss there ends it")
    return replace(tctx, plan=replace(tctx.plan, challenge_req_s=best))
