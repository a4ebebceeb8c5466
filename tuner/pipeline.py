"""The main job: inputs → (quantize) → study of real vLLM trials → outputs. Synchronous."""

from __future__ import annotations

import datetime as dt
import functools
import sys
import threading
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import optuna

from launch.config import ServeConfig
from tuner.certified import certify_study, floor_rate
from tuner.certified import stored as stored_certifications
from tuner.certify import Certification
from tuner.confirm import (
    STUDY_ATTR,
    Confirmation,
    confirm,
    confirm_trial_number,
    current_confirmation,
    rival_of,
    stored_run,
    with_confirmations,
)
from tuner.headline import CONFIRMED, Headline, headline
from tuner.inputs import Inputs, measure_plan
from tuner.layout import searched_layouts
from tuner.objective import CPU_SERVER_NICE, TrialContext, run_trial
from tuner.outputs import Summary, certified_summary, summarize, write_outputs
from tuner.placement import GpuPool, GroupStartLocks, placed
from tuner.report_html import write_report
from tuner.sample_answer import STUDY_ATTR as SAMPLE_ATTR
from tuner.sample_answer import sample_answer
from tuner.settings import TuneSettings
from tuner.soak import certify_config
from tuner.space import SpaceContext, params_of, suggest_config
from tuner.spec_rule import apply_rule, find_twin, speculates, twin_of
from tuner.study import (
    STUDY_NAME,
    enqueue_first,
    finished,
    open_study,
    results_of,
    run_study,
    storage_for,
    timelines_of,
)
from tuner.study_identity import check_same_study, study_defines
from tuner.time_budget import TimeBudget
from tuner.trial_result import TrialResult


@dataclass(frozen=True)
class TuneOutcome:
    out: Path
    summary: Summary
    trials_run: int
    confirmation: Any = None  # tuner.confirm.Confirmation: the study's --confirm runs of its current best
    headline: Headline | None = None

    @property
    def exit_code(self) -> int:
        """1 when no configuration met the SLOs, or a certifying soak was asked for and none held."""
        failed = self.headline is not None and self.headline.certification_failed
        return 0 if self.summary.best is not None and not failed else 1


class Progress:
    """Progress lines on stderr: trial k/N, best so far, ETA from the mean trial time."""

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total, self.stream, self.t0 = total, stream or sys.stderr, time.monotonic()
        self.done_here = 0
        self.trial = "-"

    def say(self, msg: str, trial: int | str | None = None) -> None:
        stamp = dt.datetime.now().strftime("%H:%M:%S")
        print(f"[{stamp}] [trial {self.trial if trial is None else trial}] {msg}", file=self.stream, flush=True)

    def trial_done(self, study: optuna.Study, summary: Summary) -> None:
        self.done_here += 1
        done = len(finished(study))
        per = (time.monotonic() - self.t0) / self.done_here
        eta = per * max(0, self.total - done)
        best = (
            f"best so far {summary.best_goodput_text()} (trial {summary.best.number})"
            if summary.best
            else "no config has met the SLO yet"
        )
        self.say(f"{done}/{self.total} finished; {best}; ETA {eta / 60:.1f} min")


def base_config(inp: Inputs) -> ServeConfig:
    s = inp.settings
    cfg = ServeConfig(
        model=str(inp.model_dir), served_model_name=inp.model_dir.name, load_format=s.load_format, seed=s.seed
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
        actual_memory_bytes=inp.actual_gpu.memory_bytes if inp.actual_gpu else None,
        startup_timeout_s=s.startup_timeout,
        env=dict(base_config(inp).env),
        output_tokens=s.output_tokens,
        server_nice=CPU_SERVER_NICE if inp.gpu.is_cpu else 0,
    )


def metadata(inp: Inputs, versions: dict[str, Any], fingerprint: str) -> dict[str, Any]:
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
        "notes": list(inp.notes),
    }


def storage_url(settings: TuneSettings) -> str:
    """--storage, or the study file in the out folder."""
    return settings.storage or f"sqlite:///{settings.out_dir().resolve()}/study.db"


def check_resume(inp: Inputs) -> None:
    """Before any work (quantization, the first trial): a resumed study keeps the settings that define it
    (tuner.study_identity). The storage itself is checked earlier (tuner.study.check_storage)."""
    from launch.fingerprint import model_fingerprint

    if inp.settings.resume:
        study = optuna.load_study(study_name=STUDY_NAME, storage=storage_for(storage_url(inp.settings)))
        check_same_study(study, study_defines(inp, model_fingerprint(inp.model_dir)))


def importances(study: optuna.Study) -> dict[str, float]:
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE and t.params]
    if len(done) < 4:
        return {}
    try:
        with warnings.catch_warnings():  # "few trials in a regime": the estimate is rough, the chart says so
            warnings.simplefilter("ignore")
            ev = optuna.importance.PedAnovaImportanceEvaluator()
            return dict(optuna.importance.get_param_importances(study, evaluator=ev))
    except (ValueError, RuntimeError):  # too few distinct values for an estimate: the report says none
        return {}


def tune(
    inp: Inputs,
    *,
    quantized: str | None = None,
    warm_start: list[dict[str, Any]] | None = None,
    progress: Progress | None = None,
    versions: dict[str, Any] | None = None,
    fingerprint: str | None = None,
    sample_question: str | None = None,
) -> TuneOutcome:
    """Run (or resume) the study and write its outputs. ``versions`` and ``fingerprint`` are the serving stack
    and model hash when known without asking them (outputs re-written on another machine); default: read.
    ``sample_question``: ask the winner this on a fresh server at the end; its answer joins best.json and
    the report (tuner.sample_answer; the demo's real model)."""
    from launch.fingerprint import model_fingerprint
    from launch.script import write_launch_script
    from tuner.versions import collect_versions

    s = inp.settings
    out = inp.out
    out.mkdir(parents=True, exist_ok=True)
    progress = progress or Progress(s.trials)
    progress.say(f"resolved settings: {s.public_dict()}")
    versions = versions or collect_versions(s.vllm_python)
    fingerprint = fingerprint or model_fingerprint(inp.model_dir)
    meta = metadata(inp, versions, fingerprint)
    base = base_config(inp)
    sctx = space_context(inp, base, quantized or s.quantized_model)
    study = open_study(storage_url(s), resume=s.resume, seed=s.seed, must_exist=s.resume)
    check_same_study(study, study_defines(inp, fingerprint))
    enqueue_first(study, warm_start or [], baseline=True)
    # the best goodput so far, for cutting a hopeless trial short after its probe (tuner.objective)
    best_now: list[float | None] = [summarize(results_of(study)).best_goodput]
    budget = TimeBudget(s.time_budget) if s.time_budget else None  # one clock for starts and measurements
    tctx = replace(trial_context(inp, out / "logs"), best_goodput=lambda: best_now[0], time_budget=budget)
    # layouts searched: each trial takes the GPU group its layout needs (tuner.placement)
    pool = GpuPool([d for d in s.device_list() if d is not None]) if sctx.layouts else None
    if pool is not None:
        tctx = replace(tctx, start_locks=GroupStartLocks(pool.devices))

    def run_one(trial: optuna.Trial, device: str | None) -> TrialResult:
        baseline = bool(trial.user_attrs.get("is_baseline"))
        config = base if baseline else suggest_config(trial, sctx)
        n = trial.number

        def say(msg: str) -> None:
            progress.say(msg, trial=n)

        say(("baseline (vLLM defaults)" if baseline else "config ") + str(config.knobs()))
        with placed(pool, config.gpus, device) as where:
            return run_trial(n, config, baseline, tctx, say, device=where)

    def after_each(st: optuna.Study) -> None:
        summary = write_all(st)
        best_now[0] = summary.best_goodput
        progress.trial_done(st, summary)

    def write_all(st: optuna.Study) -> Summary:
        def script(path: Path, best: TrialResult, head: Headline) -> None:
            write_launch_script(
                path,
                best.config,
                inp.vllm,
                fingerprint=fingerprint,
                model_dir=best.config.model,
                note=launch_note(best, head, s.slo, inp.workload.name),
                nice=tctx.server_nice,
            )

        def report(path: Path, results: list[TrialResult], summary: Summary, m: dict[str, Any], **kw: Any) -> None:
            write_report(path, results, summary, m, importances(st), **kw)

        results = results_of(st)
        certs = stored_certifications(st)
        summary = certified_summary(summarize(results), certs)
        confirmation = current_confirmation(stored_runs(st), summary)
        state_gain = headline(summary, certs, confirmation).basis == CONFIRMED
        m, _ = with_confirmations(meta, stored_runs(st), summary, state_gain=state_gain)
        if SAMPLE_ATTR in st.user_attrs:
            m = {**m, "sample_answer": st.user_attrs[SAMPLE_ATTR]}
        return write_outputs(out, results, m, script, report, timelines_of(st), certs, confirmation)

    devices = s.device_list()
    if s.overlap_startup:  # two trials per device: one starting while the other is measured
        tctx = replace(
            tctx,
            start_locks={d: threading.Lock() for d in devices},
            measure_locks={d: threading.Lock() for d in devices},
        )
        devices = [d for d in devices for _ in (0, 1)]
    if s.predict:  # perfmodel picks what to launch (issue #24)
        from tuner.predict_model import perf_model
        from tuner.predict_search import run_predicted

        say = functools.partial(progress.say, trial="predict")
        ran = run_predicted(study, s, sctx, perf_model(tctx), run_one, after_each, say, budget)
    else:
        ran = run_study(study, s.trials, run_one, after_each, devices=devices, budget=budget)
    summary = write_all(study)
    earlier = current_confirmation(stored_runs(study), summary)
    fresh = (
        _confirm(summary, s.confirm, tctx, progress, s.device_list(), len(earlier.best_goodput) if earlier else 0, pool)
        if s.confirm
        else None
    )
    if fresh is not None:  # kept in the study, so that a resumed study adds to it instead of losing it
        run = stored_run(fresh, s.devices, dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
        study.set_user_attr(STUDY_ATTR, [*stored_runs(study), run])
        summary = write_all(study)
    if tctx.plan.soak_s > 0 and summary.best is not None:
        full = replace(tctx, best_goodput=lambda: None, time_budget=None)  # soaks are never cut short
        device = s.device_list()[0]

        def certify_one(t: TrialResult) -> Certification:
            say = functools.partial(progress.say, trial=f"certify {t.number}")
            with placed(pool, t.config.gpus, device) as where:
                cert = certify_config(t.number, t.config, full, t.best_rate or 0.0, floor_rate(t), say, where)
            say(cert.line())
            return cert

        certify_study(study, summary, tctx.plan.soak_s, certify_one, s.certify)
        summary = write_all(study)
        twin = _speculation_twin(study, summary, sctx, run_one, after_each, device)
        if twin is not None:  # the rule compares like with like: the twin is certified too
            certify_study(study, summary, tctx.plan.soak_s, certify_one, s.certify, also=(twin,))
            summary = write_all(study)
    certs = stored_certifications(study)
    summary, _ = apply_rule(certified_summary(summary, certs), results_of(study), certs)
    if sample_question and summary.best is not None:
        say = functools.partial(progress.say, trial=f"sample {summary.best.number}")
        with placed(pool, summary.best.config.gpus, s.device_list()[0]) as where:
            answer = sample_answer(summary.best, tctx, say, sample_question, where)
        study.set_user_attr(SAMPLE_ATTR, answer.to_dict())
        write_all(study)
    confirmation = current_confirmation(stored_runs(study), summary)
    head = headline(summary, certs, confirmation)
    return TuneOutcome(out, summary, ran, confirmation, head)


def _speculation_twin(
    study: optuna.Study,
    summary: Summary,
    sctx: SpaceContext,
    run_one: Any,
    after_each: Any,
    device: str | None,
) -> TrialResult | None:
    """When the best speculates: its configuration without speculation, measured as one more trial of the
    study where it was not already (tuner.spec_rule); None when the best does not speculate."""
    best = summary.best
    if best is None or not speculates(best):
        return None
    twin = find_twin(best, results_of(study))
    if twin is None:
        study.enqueue_trial(params_of(twin_of(best.config), sctx), user_attrs={"speculation_twin": best.number})
        run_study(study, len(finished(study)) + 1, run_one, after_each, devices=[device])
        twin = find_twin(best, results_of(study))
    return twin


def launch_note(best: TrialResult, head: Headline, slo: str, workload: str) -> str:
    """launch.sh's header: what was measured, and the capacity it keeps (the study's headline)."""
    return f"slotune: trial {best.number}, {slo}, workload {workload}\ncapacity: {head.rate_text()}"


def stored_runs(study: optuna.Study) -> list[dict[str, Any]]:
    """The study's --confirm runs (tuner.confirm.stored_run), oldest first."""
    return list(study.user_attrs.get(STUDY_ATTR, []))


def _confirm(
    summary: Summary,
    rounds: int,
    tctx: TrialContext,
    progress: Progress,
    devices: list[str | None],
    done: int,
    pool: GpuPool | None = None,
) -> Confirmation | None:
    rival = rival_of(summary)
    if summary.best is None or rival is None:
        progress.say("--confirm: nothing to confirm (fewer than two configurations to compare)")
        return None

    # re-measurements are never cut short, and come after the search's time budget
    full = replace(tctx, best_goodput=lambda: None, time_budget=None)

    def measure(k: int, config: ServeConfig, device: str | None) -> TrialResult:
        with placed(pool, config.gpus, device) as where:
            return run_trial(
                confirm_trial_number(k),
                config,
                False,
                full,
                lambda m: progress.say(m, trial=f"confirm {k}"),
                device=where,
            )

    result = confirm(summary.best, rival, rounds, measure, progress.say, devices, done)
    progress.say(result.line())
    return result
