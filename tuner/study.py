"""The Optuna study: storage, resume, baseline first, warm starts, one trial per device.

``--trials N`` is the study's total: a resumed study runs only what is missing, and finished trials
are never rewritten (they live in the storage; trials.csv is derived from it). Several hosts can
work one study through ``--storage postgresql://…``; on one host ``devices`` gives one trial per GPU.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import optuna

from tuner.errors import UsageError
from tuner.trial_result import FAIL, PRUNED, TrialResult

STUDY_NAME = "slotune"
log = logging.getLogger("slotune")


class TrialFailed(Exception):
    """Raised inside Optuna's loop so the trial is stored as FAIL (its reason is in user attrs)."""


def storage_for(url: str) -> optuna.storages.BaseStorage:
    """An RDB storage with heartbeats, so trials of a killed tuner are marked FAIL on resume."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # heartbeat, group
    return optuna.storages.RDBStorage(url, heartbeat_interval=30, grace_period=120,
                                      engine_kwargs={"pool_pre_ping": True} if not url.startswith("sqlite") else {})


def open_study(storage_url: str, *, resume: bool, seed: int, name: str = STUDY_NAME,
               startup_trials: int = 4) -> optuna.Study:
    """Create the study, or load it with ``resume``. An existing study without ``resume`` is an error."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = storage_for(storage_url)
    exists = name in {s.study_name for s in optuna.get_all_study_summaries(storage)}
    if exists and not resume:
        raise UsageError(f"a study already exists in {storage_url}; pass --resume to continue it "
                         "or choose another --out/--storage")
    sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True,
                                         n_startup_trials=startup_trials)
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize", sampler=sampler,
                                load_if_exists=True)
    if exists:  # trials of a tuner that was killed: FAIL, so they are not waited for forever
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
    return study


def finished(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL)
    return study.get_trials(deepcopy=False, states=states)


def enqueue_first(study: optuna.Study, params_list: Iterable[dict[str, Any]], *, baseline: bool) -> None:
    """Baseline (vLLM's defaults) first, then warm-start configs — only into a study with no trials."""
    if study.get_trials(deepcopy=False):
        return
    if baseline:
        study.enqueue_trial({}, user_attrs={"is_baseline": True})
    for params in params_list:
        study.enqueue_trial(params, user_attrs={"warm_start": True}, skip_if_exists=True)


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
    time_budget_s: float | None = None,
) -> int:
    """Run trials until the study holds ``total_trials`` finished ones. Returns how many ran here.

    ``devices`` holds one entry per concurrent trial (a GPU index, or the same one twice when startups
    overlap). With ``time_budget_s`` no new trial starts once the mean trial would overrun it."""
    remaining = total_trials - len(finished(study))
    if remaining <= 0:
        return 0
    pool: queue.Queue[str | None] = queue.Queue()
    for dev in devices or [None]:
        pool.put(dev)
    lock = threading.Lock()
    t0 = time.monotonic()
    durations: list[float] = []

    def objective(trial: optuna.Trial) -> float:
        device = pool.get()
        try:
            result = run_one(trial, device)
        finally:
            pool.put(device)
        trial.set_user_attr("result", result.to_dict())
        # <= 0: every SLO held at some load; the sampler learns the infeasible region from it
        trial.set_constraint("slo", min(result.constraint, 1e6))
        if result.state == PRUNED:
            raise optuna.TrialPruned(result.fail_reason)
        if result.state == FAIL:
            raise TrialFailed(result.fail_reason)
        return result.goodput_req_s

    def callback(st: optuna.Study, ft: optuna.trial.FrozenTrial) -> None:
        with lock:
            after_each(st)
            if ft.duration is not None:
                durations.append(ft.duration.total_seconds())
            if time_budget_s and durations:
                mean = sum(durations) / len(durations)
                if time.monotonic() - t0 + mean > time_budget_s:
                    log.warning("time budget of %.0f s nearly spent: no new trial starts (resume to continue)",
                                time_budget_s)
                    st.stop()

    # counts finished and running trials of every worker, not the enqueued (WAITING) ones
    ts = optuna.trial.TrialState
    stop = optuna.study.MaxTrialsCallback(total_trials, states=(ts.COMPLETE, ts.PRUNED, ts.FAIL, ts.RUNNING))
    study.optimize(objective, n_trials=remaining, n_jobs=max(1, len(devices or [None])),
                   catch=(TrialFailed,), callbacks=[callback, stop], gc_after_trial=False)
    return remaining
