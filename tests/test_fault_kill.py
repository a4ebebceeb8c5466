"""Faults on real vLLM (CPU build): ``kill -9`` of ``tune`` at random moments of a short study. After each
kill no vLLM process of the study is left, ``--resume`` continues the study (refusing changed settings that
define it), and in the end every trial the study counts has its result: the killed ones ran again (#25).

The moments are drawn from a seeded generator (printed on failure) between the first trial line and ~40 s
later: the server's startup, its warm-up or its measurement.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pandas as pd
import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.long]

SEED = int(os.environ.get("SLOTUNE_FAULT_SEED", "25"))
KILLS = 2


def vllm_processes(model: Path) -> list[str]:
    """vLLM servers (or their watchdogs) serving this test's model, not other users' of the machine."""
    out = subprocess.run(
        ["pgrep", "-af", "vllm.entrypoints.openai.api_server|watchdog"], capture_output=True, text=True
    )
    return [line for line in out.stdout.splitlines() if str(model) in line]


def no_orphans_within(model: Path, seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := vllm_processes(model)) and time.monotonic() < deadline:
        time.sleep(1)
    return left


def tune_args(model: Path, out: Path, python: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tuner.cli", "--model", str(model), "--gpu", "cpu", "--slo", "ttft_p95=2s",
            "--workload", "chat", "--trials", "2", "--output-tokens", "16", "--level-seconds", "3",
            "--soak-seconds", "0", "--out", str(out), "--vllm-python", python, *extra]  # fmt: skip


def study_exists(out: Path) -> bool:
    db = out / "study.db"
    return db.is_file() and "slotune" in {s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{db}")}


def kill_at_random(args: list[str], env: dict[str, str], log: Path, rng: random.Random) -> float:
    """Start tune, wait for its first trial line, kill -9 it a random moment later; the moment (s after start)."""
    with log.open("w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env)
    t0 = time.monotonic()
    try:
        while not re.search(r"\[trial \d+\]", log.read_text()) and proc.poll() is None and time.monotonic() - t0 < 300:
            time.sleep(0.2)
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(rng.uniform(0.5, 40))
        return time.monotonic() - t0
    finally:
        proc.kill()  # SIGKILL to tune alone: its servers must be stopped by their watchdogs
        proc.wait()


@pytest.fixture()
def env(cpu_env: dict[str, str]) -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[1])
    return {**cpu_env, "VLLM_CPU_CI_ENV": "1", "PYTHONPATH": root}  # shorter server starts on the CPU


def test_kill_9_at_random_moments_loses_no_trial_and_leaves_no_server(tiny_model, vllm_python, env, tmp_path):
    rng = random.Random(SEED)
    model, out = tmp_path / "model", tmp_path / "study"
    subprocess.run(["cp", "-r", str(tiny_model), str(model)], check=True)
    moments = []
    for k in range(KILLS):
        resume = ("--resume",) if study_exists(out) else ()
        moments.append(kill_at_random(tune_args(model, out, vllm_python, *resume), env, tmp_path / f"kill{k}.log", rng))
        left = no_orphans_within(model, 45)
        assert not left, (SEED, moments, left)
    assert study_exists(out), (SEED, moments, (tmp_path / "kill0.log").read_text()[-2000:])

    # a resume that would change what the study measures is refused, naming the difference; nothing starts
    for flags, needle in (
        (("--slo", "ttft_p95=1s"), "--slo: 'ttft_p95=2s' then, 'ttft_p95=1s' now"),
        (("--workload", "code"), "--workload: 'chat (requests up to"),  # was an Optuna traceback
    ):
        changed = subprocess.run(
            tune_args(model, out, vllm_python, "--resume", *flags), capture_output=True, text=True, env=env
        )
        assert changed.returncode == 2 and needle in changed.stderr, (changed.stderr[:1500], changed.stderr[-1500:])
        assert "Traceback" not in changed.stderr and len(changed.stderr.strip().splitlines()) == 1

    final = subprocess.run(tune_args(model, out, vllm_python, "--resume"), capture_output=True, text=True, env=env)
    assert final.returncode == 0, (SEED, moments, final.stderr[-3000:])
    assert not no_orphans_within(model, 30)

    study = optuna.load_study(study_name="slotune", storage=f"sqlite:///{out / 'study.db'}")
    trials = study.get_trials(deepcopy=False)
    assert not [t.number for t in trials if t.state == optuna.trial.TrialState.RUNNING]
    counted = [t for t in trials if t.state.is_finished() and not t.user_attrs.get("interrupted")]
    assert len(counted) == 2 and all("result" in t.user_attrs for t in counted), (SEED, moments)
    # every other trial was cut short by a kill (or the interrupt path) and is marked so: none lost silently
    cut = [t for t in trials if t not in counted]
    assert all(t.user_attrs.get("interrupted") and "result" not in t.user_attrs for t in cut), (SEED, moments)
    assert sum(1 for t in counted if t.user_attrs.get("is_baseline")) == 1
    frame = pd.read_csv(out / "trials.csv")
    assert sorted(frame["number"]) == sorted(t.number for t in counted)
