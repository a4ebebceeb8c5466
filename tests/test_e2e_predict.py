"""End to end on real vLLM (CPU build): `tune --predict --trials 2 --certify best` launches vLLM's defaults, calibrates
the performance model on them, launches the model's top prediction, certifies the winner on fresh servers and states
its spare speed with the model set to the speed those soaks measured, in every file."""

import json
import os
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.long, pytest.mark.timeout(2400)]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def predicted(tiny_model, vllm_python, cpu_env, tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e-predict")
    model, out = root / "model", root / "study"
    shutil.copytree(tiny_model, model)
    env = {**cpu_env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), cpu_env.get("PYTHONPATH")]))}
    args = ("--model", str(model), "--gpu", "cpu", "--slo", "ttft_p95=2s", "--workload", "chat", "--output-tokens",
            "64", "--trials", "2", "--predict", "--certify", "best", "--soak-seconds", "60", "--out", str(out),
            "--vllm-python", vllm_python)  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "tuner.cli", *args], capture_output=True, text=True, timeout=2300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


def test_the_second_launch_is_the_models_prediction_and_trials_csv_says_so(predicted):
    out, _ = predicted
    rows = pd.read_csv(out / "trials.csv").set_index("number")
    assert list(rows.index) == [0, 1] and bool(rows.loc[0, "is_baseline"])
    assert pd.isna(rows.loc[0, "predicted_capacity_req_s"])  # the model was fitted on it
    assert rows.loc[1, "predicted_capacity_req_s"] > 0


def test_the_spare_speed_is_set_to_the_held_soaks_speed_and_stated_in_every_file(predicted):
    from tuner.certify.certified import stored
    from tuner.search.predict_spare import soaks_held_at, soaks_mean_tpot_ms
    from tuner.search.study import open_study

    out, proc = predicted
    best = json.loads((out / "best.json").read_text())
    spare, rate = best["spare_speed"], best["certified_rate_req_s"]
    assert rate and spare["trial"] == best["headline"]["best_trial"] and spare["rate_req_s"] == pytest.approx(rate)
    cert = stored(open_study(f"sqlite:///{out / 'study.db'}", resume=True, seed=0, must_exist=True))[spare["trial"]]
    at = spare["measured_at_req_s"]
    held = soaks_held_at(cert.soaks, at)
    assert held and at in (cert.certified_rate, cert.held_rate)
    assert spare["measured_tpot_ms"] == pytest.approx(soaks_mean_tpot_ms(held), rel=1e-9)
    assert spare["anchor"] is not None and 0.5 < spare["anchor"] < 2.0
    assert spare["slowed"] and spare["slowed"][0]["factor"] == 1.0
    line = spare["line"]
    assert "set to the speed of its soaks" in line
    assert f"# {line}\n" in (out / "launch.sh").read_text()
    assert line in unescape((out / "report.html").read_text())
    assert line in proc.stdout + proc.stderr
