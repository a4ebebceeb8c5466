"""The main job: inputs → (quantize) → study of real vLLM trials → outputs. Synchronous.

    tune ─► open the run (tuner.tune_setup) ─► the search: Optuna's sampler, or perfmodel with --predict
         ─► --confirm, certification, the sample answer (tuner.after_search) ─► the headline
The output files are rewritten from the study after each trial and each step (tuner.study_outputs).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from launch.fingerprint import model_fingerprint
from tuner.after_search import certify_best, confirm_best, sample_best, spare_best
from tuner.certify.certified import stored as stored_certifications
from tuner.certify.confirm import Confirmation
from tuner.certify.confirm_store import current_confirmation
from tuner.certify.headline import Headline, headline
from tuner.certify.spec_rule import apply_rule
from tuner.certify.summary import Summary, certified_summary
from tuner.errors import UsageError
from tuner.inputs import Inputs
from tuner.report.predict_report import certified_lines
from tuner.search.progress import Progress
from tuner.search.space import SpaceContext
from tuner.search.study import enqueue_first, open_study, results_of, run_study
from tuner.search.study_identity import check_same_study, study_defines
from tuner.search.tries import FLAG as TRY_FLAG
from tuner.search.tries import announce as announce_try
from tuner.search.tries import tried_params
from tuner.settings.tune_settings import TuneSettings
from tuner.study_outputs import StudyOutputs, stored_runs
from tuner.trial.runner import run_trial
from tuner.tune_setup import (
    TrialRunner,
    TuneRun,
    base_config,
    metadata,
    scheduler_of,
    space_context,
    storage_url,
    trial_context,
    trial_job,
)
from tuner.versions import collect_versions


@dataclass(frozen=True)
class TuneOutcome:
    out: Path
    summary: Summary
    trials_run: int
    confirmation: Confirmation | None = None  # the study's --confirm runs of its current best
    headline: Headline | None = None

    @property
    def exit_code(self) -> int:
        """1 when no configuration met the SLOs, or a certifying soak was asked for and none held."""
        failed = self.headline is not None and self.headline.certification_failed
        return 0 if self.summary.best is not None and not failed else 1


def tune(
    inp: Inputs,
    *,
    quantized: str | None = None,
    warm_start: list[dict[str, Any]] | None = None,
    progress: Progress | None = None,
    versions: dict[str, Any] | None = None,
    fingerprint: str | None = None,
    sample_question: str | None = None,
    run: TrialRunner = run_trial,
) -> TuneOutcome:
    """Run (or resume) the study and write its outputs. ``versions`` and ``fingerprint`` are the serving stack
    and model hash when known without asking them (outputs re-written on another machine); default: read.
    ``sample_question``: ask the winner this on a fresh server at the end; its answer joins best.json and
    the report (tuner.report.sample_answer; the demo's real model). ``run``: what runs one trial (tests: a stand-in)."""
    r = open_run(inp, quantized, warm_start, progress, versions, fingerprint, run)
    ran = search(r)
    summary = confirm_best(r, r.outputs.write(r.study))
    summary = certify_best(r, summary)
    certs = stored_certifications(r.study)
    for line in certified_lines(results_of(r.study), certs):
        r.progress.say(line, trial="predict")
    summary, _ = apply_rule(certified_summary(summary, certs), results_of(r.study), certs)
    if summary.best is not None:
        spare_best(r, summary)
    if sample_question and summary.best is not None:
        sample_best(r, summary.best, sample_question)
    confirmation = current_confirmation(stored_runs(r.study), summary)
    return TuneOutcome(inp.out, summary, ran, confirmation, headline(summary, certs, confirmation))


def open_run(
    inp: Inputs,
    quantized: str | None,
    warm_start: list[dict[str, Any]] | None,
    progress: Progress | None,
    versions: dict[str, Any] | None,
    fingerprint: str | None,
    run: TrialRunner,
) -> TuneRun:
    """The study opened (or resumed, checked to be the same study), its baseline and warm starts enqueued,
    and what runs its trials: the scheduler of the devices and the trials' context under its rules."""
    s = inp.settings
    base = base_config(inp)
    sctx = space_context(inp, base, quantized or s.quantized_model)
    tried = first_tries(s, sctx)
    inp.out.mkdir(parents=True, exist_ok=True)
    progress = progress or Progress(s.trials)
    progress.say(f"resolved settings: {s.public_dict()}")
    versions = versions or collect_versions(s.vllm_python)
    fingerprint = fingerprint or model_fingerprint(inp.model_dir)
    for note in (*inp.notes, *sctx.notes()):  # the inputs' and the space's notes, said once before any trial
        progress.say(f"note: {note}")
    for params in tried:
        progress.say(announce_try(params, sctx))
    study = open_study(storage_url(s), resume=s.resume, seed=s.seed, must_exist=s.resume)
    check_same_study(study, study_defines(inp, fingerprint))
    if tried and study.get_trials(deepcopy=False):
        progress.say(f"{TRY_FLAG}: this resumed study has its trials; its configurations are not enqueued again")
    enqueue_first(study, tried + (warm_start or []), baseline=True)
    scheduler = scheduler_of(s, sctx)
    tctx = replace(trial_context(inp, inp.out / "logs"), rules=scheduler.rules)
    outputs = StudyOutputs(
        inp, metadata(inp, versions, fingerprint, sctx.notes()), fingerprint, tctx.server_nice, progress, study
    )
    # the best capacity so far, for cutting a hopeless trial short after its probe (tuner.trial.measuring)
    tctx = replace(tctx, best_capacity=lambda: outputs.best_capacity)
    run_one = trial_job(base, sctx, tctx, progress, run)
    return TuneRun(inp, study, sctx, tctx, scheduler, progress, outputs, run_one)


def first_tries(s: TuneSettings, sctx: SpaceContext) -> list[dict[str, Any]]:
    """--try-first's configurations, checked against the space before anything is written."""
    tried = tried_params(s.try_first, sctx)
    if tried and s.predict:
        raise UsageError(f"{TRY_FLAG} and --predict both choose the launches: use one of them")
    return tried


def search(r: TuneRun) -> int:
    """The study's trials up to --trials; how many ran in this call."""
    s = r.inp.settings
    if s.predict:  # perfmodel picks what to launch (issue #24); it loads only here, with --predict
        from tuner.search.predict_model import perf_model
        from tuner.search.predict_search import run_predicted

        say = functools.partial(r.progress.say, trial="predict")
        model = perf_model(r.tctx)
        return run_predicted(r.study, s, r.sctx, model, r.run_one, r.outputs.after_trial, say, r.scheduler)
    return run_study(r.study, s.trials, r.run_one, r.outputs.after_trial, scheduler=r.scheduler)
