"""The Optuna study: storage, resume, baseline first, warm starts, one trial per device.

``--trials N`` is the study's total: a resumed study runs only what is missing, and finished trials
are never rewritten (they live in the storage; trials.csv is derived from it). Several hosts can
work one study through ``--storage postgresql://…``; on one host ``devices`` gives one trial per GPU.
"""

from __future__ import annotations

import logging
import os
import statistics
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import optuna
from optuna.storages._heartbeat import get_heartbeat_thread  # what Study.optimize uses

from loadtest.crash import one_line
from loadtest.redact import mask
from tuner.errors import UsageError
from tuner.time_budget import OverBudget, TimeBudget
from tuner.trial_owner import OWNER_ATTR, owner_tag, release_stale_trials
from tuner.trial_result import TrialResult, TrialState

STUDY_NAME = "slotune"
log = logging.getLogger("slotune")


def storage_for(url: str) -> optuna.storages.BaseStorage:
    """An RDB storage with heartbeats, so trials of a tuner on another host that died are found on resume."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # heartbeat, group
    # we run trials through ask/tell with our own heartbeat (run_study), which Optuna warns about
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
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
    ``resume``). Trials whose tuner is gone are released first (tuner.trial_owner)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
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
    """Every trial's timeline (tuner.objective): those with a result, and those given up over the time
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
) -> int:
    """Run trials until the study holds ``total_trials`` started or finished ones. Returns how many ran here.

    ``devices`` holds one entry per concurrent worker (a GPU index, or the same one twice when startups
    overlap). Trials are asked for one at a time under a lock: with several threads on one SQLite study,
    Optuna can hand the same enqueued trial (the baseline) to two of them. With a ``budget`` no new trial
    starts once a typical (median) trial would overrun it, and a trial that raises OverBudget (its
    measurement would: tuner.time_budget) is given up. Interrupted trials are stored as FAIL.

    With several workers the baseline runs alone: the others ask for their first trial once it has ended.
    Every gain is stated against it, and measured while other servers started and waited on the host it
    came out low: on the H200, vLLM's defaults at 1.08 and 1.12 req/s in two such searches, 1.61–1.82 on
    fresh servers with nothing else starting (README, "Long documents")."""
    if total_trials - len(finished(study)) <= 0:
        return 0
    ask_lock, tell_lock = threading.Lock(), threading.Lock()
    alone = threading.Condition(ask_lock)  # notified when a trial ends (the baseline running alone, or one before it)
    alone_number: int | None = None  # the baseline's trial number while it runs alone
    stop = threading.Event()
    durations: list[float] = []
    in_flight: dict[int, optuna.Trial] = {}
    ran = 0
    workers = devices or [None]

    def next_trial() -> optuna.Trial | None:
        nonlocal ran, alone_number
        with alone:  # counts running trials of every worker and host, not the enqueued (WAITING) ones
            while alone_number is not None and not stop.is_set():
                alone.wait(timeout=0.5)
            if stop.is_set() or _started(study) >= total_trials:
                return None
            trial = study.ask()
            in_flight[trial.number] = trial
            ran += 1
            if len(workers) > 1 and trial.user_attrs.get("is_baseline"):
                alone_number = trial.number
                while len(in_flight) > 1 and not stop.is_set():  # re-run on resume, after other trials
                    alone.wait(timeout=0.5)
                if stop.is_set():
                    with tell_lock:
                        if trial.number in in_flight:  # not yet stored by run_study's interrupt path
                            store_interrupted(trial)
                    alone_number = None
                    alone.notify_all()
                    return None
            return trial

    def ended(number: int) -> None:
        nonlocal alone_number
        with alone:
            if alone_number == number:
                alone_number = None
            alone.notify_all()

    def tell(trial: optuna.Trial, result: TrialResult, seconds: float) -> None:
        trial.set_user_attr("result", result.to_dict())
        # <= 0: every SLO held at some load; the sampler learns the infeasible region from it
        trial.set_constraint("slo", min(result.constraint, 1e6))
        with tell_lock:
            in_flight.pop(trial.number, None)
            if result.state == TrialState.PRUNED:
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            elif result.state == TrialState.FAIL:
                log.warning("trial %d failed: %s", trial.number, result.fail_reason)
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, result.goodput_req_s)
            after_each(study)
            durations.append(seconds)
            # the median: the first trials' cold start (compile caches) and queueing for a start lock
            # would make a mean stop a call minutes early
            typical = statistics.median(durations)
            if budget is not None and not stop.is_set() and typical > budget.left():
                log.warning(
                    "time budget of %.0f s nearly spent: no new trial starts (resume to continue)", budget.seconds
                )
                stop.set()

    def store_interrupted(trial: optuna.Trial, why: str | None = None) -> None:
        """A trial cut short (call with tell_lock held): FAIL at once, marked so that it is not counted and
        a resume does not wait for it."""
        in_flight.pop(trial.number, None)
        trial.set_user_attr("interrupted", True)
        if why is not None:
            trial.set_user_attr("given_up", why)
        study.tell(trial, state=optuna.trial.TrialState.FAIL)

    def worker(device: str | None) -> None:
        while (trial := next_trial()) is not None:
            started = time.monotonic()
            try:
                trial.set_user_attr(OWNER_ATTR, owner_tag())  # a resume knows at once when this process is gone
                try:
                    # the heartbeat Study.optimize would keep: a killed tuner's trials turn FAIL on resume
                    with get_heartbeat_thread(trial._trial_id, study._storage):
                        result = run_one(trial, device)
                except OverBudget as over:  # its measurement would overrun the budget: no new trial either
                    stop.set()
                    with tell_lock:
                        if over.timeline is not None:
                            trial.set_user_attr("timeline", over.timeline)
                        store_interrupted(trial, str(over))
                    log.warning("trial %d given up: %s", trial.number, over)
                    return
                tell(trial, result, time.monotonic() - started)  # its result informs the next trials
            finally:
                ended(trial.number)

    try:
        if len(workers) == 1:  # in this thread, so Ctrl-C reaches the trial and stops its server
            worker(workers[0])
        else:
            errors: list[BaseException] = []

            def guarded(device: str | None) -> None:
                try:
                    worker(device)
                except BaseException as exc:  # a bug in one worker stops the others from starting trials
                    errors.append(exc)
                    stop.set()

            threads = [
                threading.Thread(target=guarded, args=(d,), daemon=True, name=f"trial-worker-{i}")
                for i, d in enumerate(workers)
            ]
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(timeout=0.5)
            if errors:
                raise errors[0]
    except BaseException:
        stop.set()
        with tell_lock:
            for trial in list(in_flight.values()):
                store_interrupted(trial)
        raise
    return ran
