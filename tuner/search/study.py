"""The Optuna study: storage, resume, baseline first, warm starts, one trial per device.

``--trials N`` is the study's total: a resumed study runs only what is missing, and finished trials
are never rewritten (they live in the storage; trials.csv is derived from it). Several hosts can
work one study through ``--storage postgresql://…``; on one host ``devices`` gives one trial per GPU.
"""

from __future__ import annotations

import functools
import logging
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.storages._heartbeat import get_heartbeat_thread  # what Study.optimize uses

from loadtest.crash import one_line
from loadtest.redact import mask
from tuner.errors import UsageError
from tuner.search.trial_owner import OWNER_ATTR, owner_tag, release_stale_trials
from tuner.trial.device_rules import DeviceRules
from tuner.trial.result import TrialResult, TrialState
from tuner.trial.scheduler import Done, Job, Scheduler
from tuner.trial.time_budget import TimeBudget

STUDY_NAME = "slotune"
log = logging.getLogger("slotune")


def _quiet_optuna() -> None:
    """Optuna's notices about what we use on purpose, kept off the user's console: the heartbeat and the TPE
    sampler's ``group`` are experimental, and we run trials through ask/tell with our own heartbeat (run_study)."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")


def storage_for(url: str) -> optuna.storages.BaseStorage:
    """An RDB storage with heartbeats, so trials of a tuner on another host that died are found on resume."""
    _quiet_optuna()
    engine: dict[str, Any] = {}
    if not url.startswith("sqlite"):
        engine["pool_pre_ping"] = True
    if url.startswith("postgresql"):
        engine["connect_args"] = {"connect_timeout": 10}  # an unreachable host: an error in 10 s, not minutes
    return optuna.storages.RDBStorage(url, heartbeat_interval=30, grace_period=120, engine_kwargs=engine)


def _existing(url: str) -> dict[str, int]:
    """{study name: trials} in the storage at ``url``; UsageError (credentials masked) when it cannot be opened."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    try:
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database and not os.path.exists(parsed.database):
            return {}  # nothing stored yet; opening it would create the file
        return {s.study_name: s.n_trials for s in optuna.get_all_study_summaries(storage_for(url))}
    except (SQLAlchemyError, ImportError, ValueError, optuna.exceptions.StorageInternalError) as exc:
        why = one_line(str(exc).split("\n(Background on this error")[0])[:300]
        raise UsageError(
            f"--storage {mask(url)}: cannot open it ({type(exc).__name__}: {why}); check the URL, that the "
            "server runs and accepts this user (password in PGPASSWORD or ~/.pgpass), or leave --storage out "
            "for a study file in --out"
        ) from None


def check_storage(url: str, *, resume: bool, name: str = STUDY_NAME) -> None:
    """Before any work: the storage opens, and holds a study exactly when ``resume`` says it should."""
    exists = name in _existing(url)
    if exists and not resume:
        raise UsageError(
            f"a study already exists in {mask(url)}; pass --resume to continue it or choose another --out/--storage"
        )
    if resume and not exists:
        raise UsageError(
            f"--resume: there is no study in {mask(url)} to continue; run without --resume to start one "
            "(or point --out/--storage at the study)"
        )


def open_study(
    storage_url: str,
    *,
    resume: bool,
    seed: int,
    name: str = STUDY_NAME,
    startup_trials: int = 4,
    must_exist: bool = False,
) -> optuna.Study:
    """Create the study, or load it with ``resume``. An existing study without ``resume`` is an error, and
    so is a missing one with ``must_exist`` (``tune --resume``; workers joining a shared study pass only
    ``resume``). Trials whose tuner is gone are released first (tuner.search.trial_owner)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    _quiet_optuna()  # before the sampler: its group=True warned on the console of every tune (seen in run h's log)
    stored = _existing(storage_url)
    exists = name in stored
    if (exists and not resume) or (must_exist and not exists):
        check_storage(storage_url, resume=resume, name=name)
    # a resumed study's sampler must not replay the random draws of the call that began it: with the
    # same seed, the first trial after a resume repeated the first trial of the study (seen on the H200)
    sampler = optuna.samplers.TPESampler(
        seed=seed + stored.get(name, 0), multivariate=True, group=True, n_startup_trials=startup_trials
    )
    study = optuna.create_study(
        study_name=name, storage=storage_for(storage_url), direction="maximize", sampler=sampler, load_if_exists=True
    )
    if exists:
        released = release_stale_trials(study)
        if released:
            log.warning("trials %s of an earlier run that stopped without ending them: run again", released)
    return study


def finished(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """Trials that ran to an end. One cut short by an interrupt (Ctrl-C, a time limit) is not: a resumed
    study runs another in its place."""
    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL)
    return [t for t in study.get_trials(deepcopy=False, states=states) if not t.user_attrs.get("interrupted")]


def _started(study: optuna.Study) -> int:
    """Finished trials plus those running now (in any worker or host); WAITING (enqueued) ones not."""
    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    return len(finished(study)) + len(running)


def enqueue_first(study: optuna.Study, params_list: Iterable[dict[str, Any]], *, baseline: bool) -> None:
    """Baseline (vLLM's defaults) first, then warm-start configs — into a study with no trials. A resumed
    study whose baseline ended without a result (interrupted: Ctrl-C, a time limit, given up over the time
    budget; or its tuner was killed) gets it again: without it no gain can be stated."""
    trials = study.get_trials(deepcopy=False)
    pending = (optuna.trial.TrialState.WAITING, optuna.trial.TrialState.RUNNING)
    if baseline and not any(
        t.user_attrs.get("is_baseline") and (t.state in pending or "result" in t.user_attrs) for t in trials
    ):
        study.enqueue_trial({}, user_attrs={"is_baseline": True})
    if trials:  # warm starts only into a new study
        return
    for params in params_list:
        study.enqueue_trial(params, user_attrs={"warm_start": True}, skip_if_exists=True)


def timelines_of(study: optuna.Study) -> dict[int, dict[str, Any]]:
    """Every trial's timeline (tuner.trial.runner): those with a result, and those given up over the time
    budget after their server was up (not results, but company to other trials' measurements)."""
    out: dict[int, dict[str, Any]] = {}
    for ft in study.get_trials(deepcopy=False):
        timeline = (ft.user_attrs.get("result") or {}).get("timeline") or ft.user_attrs.get("timeline")
        if timeline:
            out[ft.number] = timeline
    return out


def results_of(study: optuna.Study) -> list[TrialResult]:
    """Every trial's stored TrialResult (trials that died without one are skipped)."""
    out = []
    for ft in study.get_trials(deepcopy=False):
        if "result" in ft.user_attrs:
            out.append(TrialResult.from_dict(ft.user_attrs["result"]))
    return out


def run_study(
    study: optuna.Study,
    total_trials: int,
    run_one: Callable[[optuna.Trial, str | None], TrialResult],
    after_each: Callable[[optuna.Study], None],
    devices: list[str | None] | None = None,
    budget: TimeBudget | None = None,
    scheduler: Scheduler | None = None,
) -> int:
    """Run trials until the study holds ``total_trials`` started or finished ones. Returns how many ran here.

    The ``scheduler`` (default: one on ``devices`` with ``budget``) runs them: one per device slot, the
    baseline alone, no new trial once the time budget would be overrun (tuner.trial.scheduler). A trial
    given up over the budget (OverBudget), cut short (Ctrl-C, a bug elsewhere) or asked but never started
    is stored as interrupted: FAIL, not counted, run again on resume."""
    if total_trials - len(finished(study)) <= 0:
        return 0
    trials = _StudyTrials(study, total_trials, run_one, after_each)
    try:
        (scheduler or Scheduler(devices or [None], DeviceRules(budget=budget))).run(trials.next_job, trials.ended)
    finally:
        trials.interrupt_the_rest()
    return trials.asked


@dataclass
class _StudyTrials:
    """The study's side of a run, Optuna's ask → run → tell: trials are asked for and told in the
    scheduler's thread (with several threads on one SQLite study, Optuna can hand the same enqueued trial
    to two of them), and run in a slot's thread with their owner tag and heartbeat."""

    study: optuna.Study
    total: int
    run_one: Callable[[optuna.Trial, str | None], TrialResult]
    after_each: Callable[[optuna.Study], None]
    pending: dict[Job[TrialResult], optuna.Trial] = field(default_factory=dict)  # asked, not yet told
    asked: int = 0

    def next_job(self) -> Job[TrialResult] | None:
        if _started(self.study) >= self.total:  # running trials of every worker and host count
            return None
        trial = self.study.ask()
        job = Job(functools.partial(self._run, trial), alone=bool(trial.user_attrs.get("is_baseline")))
        self.pending[job] = trial
        self.asked += 1
        return job

    def _run(self, trial: optuna.Trial, device: str | None) -> TrialResult:
        trial.set_user_attr(OWNER_ATTR, owner_tag())  # a resume knows at once when this process is gone
        # the heartbeat Study.optimize would keep: a killed tuner's trials turn FAIL on resume
        with get_heartbeat_thread(trial._trial_id, self.study._storage):
            return self.run_one(trial, device)

    def ended(self, done: Done[TrialResult]) -> None:
        trial = self.pending.pop(done.job)
        if done.over_budget is not None:  # its measurement would overrun the budget: no new trial either
            if done.over_budget.timeline is not None:
                trial.set_user_attr("timeline", done.over_budget.timeline)
            _store_interrupted(self.study, trial, str(done.over_budget))
            log.warning("trial %d given up: %s", trial.number, done.over_budget)
            return
        assert done.result is not None
        _tell(self.study, trial, done.result)
        self.after_each(self.study)  # its result informs the next trials

    def interrupt_the_rest(self) -> None:
        for trial in self.pending.values():
            _store_interrupted(self.study, trial)
        self.pending.clear()


def _tell(study: optuna.Study, trial: optuna.Trial, result: TrialResult) -> None:
    trial.set_user_attr("result", result.to_dict())
    # <= 0: every SLO held at some load; the sampler learns the infeasible region from it
    trial.set_constraint("slo", min(result.constraint, 1e6))
    if result.state == TrialState.PRUNED:
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    elif result.state == TrialState.FAIL:
        log.warning("trial %d failed: %s", trial.number, result.fail_reason)
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    else:
        study.tell(trial, result.capacity_req_s)


def _store_interrupted(study: optuna.Study, trial: optuna.Trial, why: str | None = None) -> None:
    """A trial cut short: FAIL at once, marked so that it is not counted and a resume does not wait for it."""
    trial.set_user_attr("interrupted", True)
    if why is not None:
        trial.set_user_attr("given_up", why)
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
