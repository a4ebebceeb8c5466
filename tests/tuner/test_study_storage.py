"""The study layer on real storage: resume never rewrites a trial; two workers share a PostgreSQL study.

The trial function here is a cheap stand-in for a vLLM trial: what is under test is the storage,
the resume logic and the worker loop, not vLLM (the end-to-end tests cover that).
"""

import json
import subprocess
import sys
import textwrap

import pytest

from tuner.errors import UsageError
from tuner.search.study import enqueue_first, finished, open_study, results_of, run_study, timelines_of
from tuner.trial.time_budget import OverBudget, TimeBudget

WORKER = textwrap.dedent("""
    import sys, time
    from launch.config import ServeConfig
    from tuner.search.study import open_study, run_study
    from tuner.trial.result import TrialResult, COMPLETE
    url, total, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    study = open_study(url, resume=True, seed=int(time.time() * 1000) % 1000)
    def run_one(trial, device):
        x = trial.suggest_int("max_num_seqs", 1, 64)
        time.sleep(0.3)
        return TrialResult(trial.number, COMPLETE, False, ServeConfig(model="/m", max_num_seqs=x),
                           slo_met=True, goodput_req_s=float(x), extra={"worker": tag})
    run_study(study, total, run_one, lambda st: None)
""")


def fake_run_one(trial, device):
    from launch.config import ServeConfig
    from tuner.trial.result import COMPLETE, PRUNED, TrialResult

    x = trial.suggest_int("max_num_seqs", 1, 64)
    state = PRUNED if x > 60 else COMPLETE
    return TrialResult(
        trial.number,
        state,
        bool(trial.user_attrs.get("is_baseline")),
        ServeConfig(model="/m", max_num_seqs=x),
        slo_met=state == COMPLETE,
        goodput_req_s=float(x),
    )


def test_resume_runs_only_what_is_missing_and_never_rewrites(tmp_path):
    url = f"sqlite:///{tmp_path}/study.db"
    study = open_study(url, resume=False, seed=0)
    enqueue_first(study, [{"max_num_seqs": 7}], baseline=True)
    assert run_study(study, 3, fake_run_one, lambda st: None) == 3
    before = {t.number: json.dumps(t.user_attrs["result"], sort_keys=True) for t in study.trials}
    res = results_of(study)
    assert res[0].is_baseline and res[1].config.max_num_seqs == 7  # baseline first, then the warm start
    with pytest.raises(UsageError, match="--resume"):
        open_study(url, resume=False, seed=0)
    again = open_study(url, resume=True, seed=0)
    assert run_study(again, 3, fake_run_one, lambda st: None) == 0
    assert run_study(again, 5, fake_run_one, lambda st: None) == 2
    after = {t.number: json.dumps(t.user_attrs["result"], sort_keys=True) for t in again.trials}
    assert all(after[n] == before[n] for n in before) and len(finished(again)) == 5


@pytest.mark.postgres
def test_two_workers_share_one_postgres_study(postgres_url):
    open_study(postgres_url, resume=False, seed=0)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, postgres_url, "8", tag]) for tag in ("a", "b")]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    study = open_study(postgres_url, resume=True, seed=0)
    results = results_of(study)
    numbers = [r.number for r in results]
    assert len(numbers) == len(set(numbers)) and 8 <= len(numbers) <= 9  # MaxTrials may overshoot by one
    assert {r.extra["worker"] for r in results} == {"a", "b"}


def test_enqueued_warm_starts_do_not_count_against_the_trial_budget(tmp_path):
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [{"max_num_seqs": 7}, {"max_num_seqs": 9}], baseline=True)
    assert run_study(study, 3, fake_run_one, lambda st: None) == 3
    res = results_of(study)
    assert len(res) == 3 and [r.config.max_num_seqs for r in res[1:]] == [7, 9]


def test_two_workers_on_one_sqlite_study_never_run_the_same_trial(tmp_path):
    """Optuna can give one enqueued trial (the baseline) to two threads; each trial must run once."""
    import threading
    import time

    seen: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def slow_run_one(trial, device):
        with lock:
            seen.append((trial.number, bool(trial.user_attrs.get("is_baseline"))))
        time.sleep(0.05)
        return fake_run_one(trial, device)

    for attempt in range(5):
        seen.clear()
        study = open_study(f"sqlite:///{tmp_path}/s{attempt}.db", resume=False, seed=attempt)
        enqueue_first(study, [{"max_num_seqs": 7}], baseline=True)
        assert run_study(study, 4, slow_run_one, lambda st: None, devices=["0", "0"]) == 4
        numbers = [n for n, _ in seen]
        assert sorted(numbers) == [0, 1, 2, 3], seen
        assert [b for _, b in seen].count(True) == 1
        assert len(finished(study)) == 4


def test_an_interrupted_trial_is_stored_as_fail_and_the_interrupt_goes_on(tmp_path):
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)

    def interrupted(trial, device):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_study(study, 3, interrupted, lambda st: None)
    (trial,) = study.trials
    assert trial.state.name == "FAIL" and trial.user_attrs["interrupted"] is True
    assert finished(study) == [] and results_of(study) == []  # not counted, not reported
    assert run_study(study, 2, fake_run_one, lambda st: None) == 2  # a resume runs the full two
    assert len(finished(study)) == 2 and len(study.trials) == 3


def test_time_budget_stops_new_trials_but_keeps_finished_ones(tmp_path):
    import time

    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)

    def slow(trial, device):
        time.sleep(0.3)
        return fake_run_one(trial, device)

    ran = run_study(study, 10, slow, lambda st: None, budget=TimeBudget(0.5))
    assert ran == 1 and len(finished(study)) == 1  # 0.3 s elapsed + 0.3 s mean > 0.5 s: no second trial


def test_a_trial_given_up_over_the_time_budget_is_not_counted_and_no_new_trial_starts(tmp_path):

    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)

    def second_gives_up(trial, device):
        if trial.number == 1:
            raise OverBudget(
                "time budget: 10 s left, a measurement takes 200 s here",
                {"host": "h", "device": "0", "launched": 5.0, "ready": 9.0, "stopped": 12.0},
            )
        return fake_run_one(trial, device)

    assert run_study(study, 5, second_gives_up, lambda st: None) == 2  # trial 0 ran, trial 1 gave up, then none
    given_up = study.trials[1]
    assert given_up.state.name == "FAIL" and given_up.user_attrs["interrupted"] is True
    assert "10 s left" in given_up.user_attrs["given_up"]
    assert len(finished(study)) == 1 and [r.number for r in results_of(study)] == [0]
    assert timelines_of(study) == {1: {"host": "h", "device": "0", "launched": 5.0, "ready": 9.0, "stopped": 12.0}}
    assert run_study(study, 3, fake_run_one, lambda st: None) == 2  # a resume runs two in its place


def test_a_resumed_study_does_not_replay_the_first_calls_random_draws(tmp_path):
    """Seen on the H200: the first trial after a resume was the study's first sampled trial again."""
    url = f"sqlite:///{tmp_path}/study.db"
    first = open_study(url, resume=False, seed=3)
    run_study(first, 2, fake_run_one, lambda st: None)
    again = open_study(url, resume=True, seed=3)
    run_study(again, 4, fake_run_one, lambda st: None)
    drawn = [t.params["max_num_seqs"] for t in again.trials]
    assert drawn[2:] != drawn[:2]


def _timed_trials(together: int = 0):
    """A stand-in trial of 0.3 s, and the (start, end, is_baseline) of each that ran. With ``together``,
    trials other than the baseline also wait until that many of them are running at once (30 s at most:
    a wait that times out fails the trial, and so the study)."""
    import threading
    import time

    spans: dict[int, tuple[float, float, bool]] = {}
    lock = threading.Lock()
    barrier = threading.Barrier(together) if together else None

    def timed(trial, device):
        t0 = time.monotonic()
        time.sleep(0.3)
        if barrier is not None and not trial.user_attrs.get("is_baseline"):
            barrier.wait(timeout=30)
        with lock:
            spans[trial.number] = (t0, time.monotonic(), bool(trial.user_attrs.get("is_baseline")))
        return fake_run_one(trial, device)

    return timed, spans


def test_with_several_workers_the_baseline_runs_alone(tmp_path):
    """The baseline's measurement is what every gain is stated against: no other trial runs beside it."""
    timed, spans = _timed_trials(together=4)  # the four others must run at once (a barrier, not timing)
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)
    assert run_study(study, 5, timed, lambda st: None, devices=["0", "0", "1", "1"]) == 5
    ((_, b1, _),) = [s for s in spans.values() if s[2]]
    others = [s for s in spans.values() if not s[2]]
    assert len(others) == 4 and all(s0 >= b1 for s0, _, _ in others)  # each began after the baseline ended


def test_a_baseline_enqueued_behind_another_trial_waits_for_it_to_end(tmp_path):
    """On resume the re-enqueued baseline can come after a pending warm start: it still runs alone."""
    timed, spans = _timed_trials()
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    study.enqueue_trial({"max_num_seqs": 7}, user_attrs={"warm_start": True})
    study.enqueue_trial({}, user_attrs={"is_baseline": True})
    assert run_study(study, 4, timed, lambda st: None, devices=["0", "1"]) == 4
    ((b0, b1, _),) = [s for s in spans.values() if s[2]]
    assert all(e <= b0 or s0 >= b1 for s0, e, base in spans.values() if not base)


def test_a_bug_in_the_baseline_running_alone_stops_the_waiting_workers(tmp_path):
    ran: list[int] = []

    def broken_baseline(trial, device):
        ran.append(trial.number)
        if trial.user_attrs.get("is_baseline"):
            raise RuntimeError("bug")
        return fake_run_one(trial, device)

    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)
    with pytest.raises(RuntimeError, match="bug"):
        run_study(study, 4, broken_baseline, lambda st: None, devices=["0", "1"])
    assert ran == [0]


def test_a_baseline_cut_short_runs_again_on_resume(tmp_path):
    url = f"sqlite:///{tmp_path}/s.db"
    study = open_study(url, resume=False, seed=0)
    enqueue_first(study, [{"max_num_seqs": 7}], baseline=True)

    def interrupted(trial, device):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_study(study, 3, interrupted, lambda st: None)
    again = open_study(url, resume=True, seed=0)
    enqueue_first(again, [{"max_num_seqs": 7}], baseline=True)
    assert run_study(again, 3, fake_run_one, lambda st: None) == 3
    done = results_of(again)
    assert sorted(r.is_baseline for r in done) == [False, False, True]
    assert 7 in [r.config.max_num_seqs for r in done]  # the warm start still enqueued runs too
    enqueue_first(again, [], baseline=True)  # it has its baseline now: no second one
    assert run_study(again, 4, fake_run_one, lambda st: None) == 1
    assert sum(r.is_baseline for r in results_of(again)) == 1


def test_a_baseline_waiting_for_its_turn_is_stored_as_interrupted_when_the_run_stops(tmp_path):
    """The trial ahead of it is given up over the time budget: the baseline never starts, a resume runs it."""
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    study.enqueue_trial({"max_num_seqs": 7}, user_attrs={"warm_start": True})
    study.enqueue_trial({}, user_attrs={"is_baseline": True})
    ran: list[int] = []

    def ahead_gives_up(trial, device):
        ran.append(trial.number)
        if not trial.user_attrs.get("is_baseline"):
            import time

            time.sleep(0.5)  # the other worker has asked for the baseline meanwhile, and waits
            raise OverBudget("time budget: 0 s left")
        return fake_run_one(trial, device)

    assert run_study(study, 4, ahead_gives_up, lambda st: None, devices=["0", "1"]) == 2
    assert ran == [0] and all(t.user_attrs.get("interrupted") for t in study.trials)
    assert study.trials[1].user_attrs.get("is_baseline") and finished(study) == []
    enqueue_first(study, [], baseline=True)
    assert run_study(study, 1, fake_run_one, lambda st: None) == 1
    assert [r.is_baseline for r in results_of(study)] == [True]


def test_the_sampler_is_told_each_trials_capacity_not_its_goodput(tmp_path):
    from launch.config import ServeConfig
    from tuner.trial.result import COMPLETE, TrialResult

    def run_one(trial, device):  # goodput falls as the capacity rises: a sampler told goodput learns backwards
        x = trial.suggest_int("max_num_seqs", 1, 64)
        met = x % 3 != 0
        return TrialResult(
            trial.number, COMPLETE, False, ServeConfig(model="/m", max_num_seqs=x), slo_met=met,
            best_rate=float(x) if met else None, goodput_req_s=100.0 - x,
        )  # fmt: skip

    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    assert run_study(study, 6, run_one, lambda st: None) == 6
    told = {t.number: t.value for t in study.trials}
    assert told == {r.number: r.capacity_req_s for r in results_of(study)}
    assert {r.capacity_req_s for r in results_of(study)} != {r.goodput_req_s for r in results_of(study)}


def test_opening_a_study_puts_no_optuna_notice_on_the_console(tmp_path):
    """The TPE sampler's group=True and the heartbeat are experimental in Optuna; we use them on purpose, so a tune's
    console must not carry Optuna's warning about it (run h's log did, once per call)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    assert not [w for w in caught if "experimental" in str(w.message)], [str(w.message) for w in caught]
