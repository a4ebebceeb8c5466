"""The slice on real vLLM (CPU build), at CI's cost: `tune` runs vLLM's defaults as one trial with short
levels and no certifying soak, writes the contracted files with one headline; the frozen launch.sh serves
and stops cleanly; `tune retune` sees a same-shape weight change and re-tunes. The model's folder has a
space, a quote and ``$(touch pwned)`` in its name: nothing on the way may run or split it.

What the stated capacity promises (certifying soaks, vLLM's own benchmark for minutes, retune's soak on an
unchanged model) is `tests/test_e2e_tune.py`, marker ``long`` (docs/testing.md)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from html import unescape
from pathlib import Path

import httpx
import pandas as pd
import pytest

from launch.machine import MeasuredOn
from launch.server import free_port
from tests.procs import procs_mentioning

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parent.parent
ARGS = ("--gpu", "cpu", "--slo", "ttft_p95=2s", "--workload", "chat", "--output-tokens", "4")  # short levels
# --same-server: no vLLM start per lost level (docs/testing.md); the fresh server's own tests are test_fresh_server.py
SHORT = ("--trials", "1", "--level-seconds", "2", "--soak-seconds", "0", "--same-server")


def vllm_processes(model: Path) -> list[int]:
    """Processes (vLLM servers, watchdogs, launch.sh) whose command line names this test's ``model``."""
    return procs_mentioning(str(model))


def tune_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "tuner.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def study(tiny_model, vllm_python, cpu_env, tmp_path_factory):
    root = tmp_path_factory.mktemp("slice")
    model, out = root / "it's my model $(touch pwned)", root / "study"
    shutil.copytree(tiny_model, model)
    env = {**cpu_env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), cpu_env.get("PYTHONPATH")]))}
    proc = tune_cli("--model", str(model), *ARGS, *SHORT, "--out", str(out), "--vllm-python", vllm_python, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return model, out, proc, env


def test_tune_writes_the_files_with_one_figure_and_the_exact_kv_budget(study) -> None:
    model, out, proc, _ = study
    for name in ("launch.sh", "best.json", "trials.csv", "report.html", "study.db"):
        assert (out / name).is_file(), name
    frame = pd.read_csv(out / "trials.csv")
    assert len(frame) == 1 and bool(frame.loc[0, "is_baseline"]) and frame.loc[0, "state"] == "COMPLETE"
    row = frame.iloc[0]
    # on the CPU the KV budget is exactly the KV space: the prediction must be what vLLM reported
    assert row["kv_tokens_predicted"] == row["kv_tokens_reported"] > 0
    best = json.loads((out / "best.json").read_text())
    head = best["headline"]
    assert best["certified_rate_req_s"] is None and head["certified_rate_req_s"] is None  # --soak-seconds 0
    rate = head["rate_req_s"]
    assert rate == best["best"]["best_rate_req_s"] > 0 and row["best_rate_req_s"] == pytest.approx(rate, abs=1e-4)
    # the same figure, labelled as an estimate, in the console, the report and launch.sh
    text = f"{rate:.3f} req/s"
    assert head["line"] in proc.stdout and "not certified" in head["line"]
    assert text in unescape((out / "report.html").read_text()) and text in (out / "launch.sh").read_text()
    # and the machine it was measured on, as the versions probe recorded it: this one
    measured = MeasuredOn.from_versions(best["versions"])
    assert measured is not None and measured.cpus == os.cpu_count() and measured.device.startswith("cpu: ")
    launch_sh = (out / "launch.sh").read_text()
    assert f"# measured on: {measured.text()}; a fixed request alone at " in launch_sh  # and its pace (launch.pace)
    pace = re.search(r"^MEASURED_PACE=([\d.]+)$", launch_sh, re.M)
    assert pace is not None and float(pace.group(1)) == round(best["best"]["pace_ms"], 3) > 0  # best.json's
    assert "\nPACE_TOLERANCE=2\n" in launch_sh  # a CPU's (launch.pace.pace_tolerance)
    assert "[trial 0]" in proc.stderr
    assert not vllm_processes(model), "tune left a vLLM process running"
    assert not list(Path.cwd().glob("pwned")) and not list(model.parent.glob("pwned"))


def test_launch_sh_serves_and_stops_with_nothing_left(study, tmp_path) -> None:
    model, out, _, env = study
    name = json.loads((out / "best.json").read_text())["best"]["config"]["served_model_name"]
    port, log = free_port(), tmp_path / "launch.log"  # a file, not a pipe: an undrained pipe blocks vLLM
    with log.open("w") as sink:
        # at launch.sh's default niceness (the one it was measured at), as every server of the suite runs
        p = subprocess.Popen(["bash", str(out / "launch.sh")], env={**env, "PORT": str(port)}, stdout=sink,
                             stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        end = time.monotonic() + 600
        while "ready: http" not in log.read_text():
            assert p.poll() is None and time.monotonic() < end, log.read_text()[-3000:]
            time.sleep(1)
        assert "not measured here" not in log.read_text()  # the machine it was measured on: no warning
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions",
                       json={"model": name, "prompt": "w1 w2 w3", "max_tokens": 4}, timeout=60)  # fmt: skip
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 4
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=90)
    assert not vllm_processes(model), log.read_text()[-2000:]


def test_retune_detects_a_same_shape_weight_change_and_retunes(study) -> None:
    from launch.fingerprint import model_fingerprint
    from tuner.synthetic import write_model

    model, out, _, env = study
    old = json.loads((out / "best.json").read_text())
    write_model(model, "llama-tiny", seed=1)  # same shapes, new weights
    proc = tune_cli("retune", "--study", str(out), "--trials", "1", "--soak-seconds", "0", "--json", env=env)
    doc = json.loads(proc.stdout)
    assert doc["model_changed"] is True and doc["versions_changed"] is False, proc.stderr[-3000:]
    assert doc["action"] == "retuned" and doc["old"]["fingerprint"] == old["model"]["fingerprint"]
    new_best = json.loads((Path(doc["new"]["study"]) / "best.json").read_text())
    assert new_best["model"]["fingerprint"] == model_fingerprint(model) != old["model"]["fingerprint"]
    assert proc.returncode == (1 if doc["regression"] else 0), proc.stderr[-3000:]
    # the frozen files follow a verified winner only, and then they are the new study's
    now = json.loads((out / "best.json").read_text())
    verified = bool(doc["new"]["verification"].get("slo_met"))
    assert doc["launch_sh_updated"] is verified
    assert now["model"]["fingerprint"] == (new_best if verified else old)["model"]["fingerprint"]
    assert not vllm_processes(model)
