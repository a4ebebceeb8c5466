"""End to end on real vLLM (CPU build): the slice `tune … --trials 2` with its certifying soaks, the frozen
launch.sh held to the certified rate by vLLM's own benchmark client, and the nightly re-tune
(unchanged → re-verified by a soak; same-shape weight change → detected and re-tuned)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from html import unescape
from pathlib import Path

import httpx
import pandas as pd
import pytest

from launch.machine import MeasuredOn

# the study certifies with 120-s soaks: up to six of them (the last confirming on another server), plus two
# searches, can pass 15 minutes
pytestmark = [pytest.mark.vllm, pytest.mark.long, pytest.mark.timeout(2700)]

# The certified rate is checked by vLLM's own benchmark client for as long as a soak: 0.95 x holds, 1.3 x does
# not; and a retune soak at 0.9 x holds (docs/certification.md, results/cpu-e2e-crosscheck-2026-12-02-d).

ROOT = Path(__file__).resolve().parent.parent
SLO = "ttft_p95=2s"
# 64 output tokens: the server's decoding sets the capacity. With 16 it reached 70+ req/s, where slotune's own
# client on the same 2 cores set it (a 30-s soak held 73 req/s, a soak at 66 missed on TTFT growth, vllm bench
# serve held 69 at p95 218 ms); `summarize` put cold long-prompt shapes in the cross-check's first minute.
WORKLOAD = "chat"
OUTPUT_TOKENS = "64"
SOAK_S = "120"  # the CPU default: a 30-s soak certified 31.5 req/s that vLLM's benchmark did not hold for 2 min
CROSS_CHECK_S = 120  # vLLM's benchmark at 95 % of the certified rate, as the issue asks
OVER_S = 120  # and at 130 %, as long as a soak: 60 s held 1.3x while the last half's p95 doubled (results/)


def vllm_processes(model):
    """vLLM servers (or their watchdogs) serving ``model`` — this test's, not other users' of the machine."""
    out = subprocess.run(
        ["pgrep", "-af", "vllm.entrypoints.openai.api_server|watchdog"], capture_output=True, text=True
    )
    return [line for line in out.stdout.splitlines() if str(model) in line]


def tune_cli(*args, env=None, timeout=2400, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )


def study_args(model, out, vllm_python, *extra):
    return ("--model", str(model), "--gpu", "cpu", "--slo", SLO, "--workload", WORKLOAD, "--trials", "2",
            "--output-tokens", OUTPUT_TOKENS, "--soak-seconds", SOAK_S, "--certify", "best", "--out", str(out),
            "--vllm-python", vllm_python, *extra)  # fmt: skip


@pytest.fixture(scope="module")
def study(tiny_model, vllm_python, cpu_env, tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    model = root / "model"
    shutil.copytree(tiny_model, model)
    out = root / "study"
    env = {**cpu_env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), cpu_env.get("PYTHONPATH")]))}
    proc = tune_cli(*study_args(model, out, vllm_python), env=env)
    return model, out, proc, env


def test_slice_writes_the_contracted_files_and_one_headline(study):
    model, out, proc, _ = study
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("launch.sh", "best.json", "trials.csv", "report.html", "study.db"):
        assert (out / name).is_file(), name
    frame = pd.read_csv(out / "trials.csv")
    assert len(frame) == 2 and bool(frame.loc[0, "is_baseline"]) and frame["is_baseline"].sum() == 1
    done = frame[frame["state"] == "COMPLETE"]
    assert len(done) >= 1 and done["slo_met"].any()
    # on the CPU the KV budget is exactly the KV space: the prediction must match what vLLM reported
    assert (done["kv_tokens_predicted"] == done["kv_tokens_reported"]).all()
    assert (done["others_starting_s"] == 0).all() and (done["others_up_mean"] == 0).all()
    best = json.loads((out / "best.json").read_text())
    head = best["headline"]
    # the winner was held at its stated rate on a fresh server: certified, at most the search's estimate
    # (--certify best: the defaults' soak, for a like-for-like gain, is left to the unit tests to save CI time)
    rate = best["certified_rate_req_s"]
    assert rate is not None and rate == head["certified_rate_req_s"] == head["rate_req_s"]
    assert 0 < rate <= best["best"]["best_rate_req_s"] + 1e-9
    cert = next(c for c in best["certifications"] if c["trial"] == best["best"]["trial"])
    held = [s for s in cert["soaks"] if s["holds"]]
    assert held and max(s["rate_req_s"] for s in held) == rate  # the highest rate a soak held
    top = next(s for s in held if s["rate_req_s"] == rate)
    assert top["seconds"] >= float(SOAK_S) * 0.8 and top["metrics"]["steady"]["holds"]
    assert top["slo_values"]["ttft_p95"] <= 2000 and top["intervals"]["ttft_p95"]["high"] > 0
    # a missed soak above it, if any, is within a step (0.9) of it: the rate is not far below what holds
    missed = [s["rate_req_s"] for s in cert["soaks"] if not s["holds"] and s["rate_req_s"] > rate]
    assert not missed or rate >= 0.9 * min(missed) - 1e-9
    # every level drew fresh prompts: the best level's prompts were not served from the prefix cache (levels
    # that repeated the trial's earlier prompts read 47-70 % hits on the CPU, 96 % on the H200)
    assert best["best"]["metrics"]["server"]["prefix_cache_hit_rate"] < 0.2
    assert top["metrics"]["server"]["prefix_cache_hit_rate"] < 0.2
    # trials.csv states the same certified rate for that trial
    row = frame[frame["number"] == best["best"]["trial"]].iloc[0]
    assert row["certified_rate_req_s"] == pytest.approx(rate, abs=1e-4)
    # one figure everywhere: console, report and launch.sh say the same rate and the same gain
    text = f"{rate:.3f} req/s certified"
    report = unescape((out / "report.html").read_text())
    assert text in proc.stdout and text in report
    assert text in (out / "launch.sh").read_text()
    # and where it was measured: this machine, as the versions probe recorded it
    measured = MeasuredOn.from_versions(best["versions"])
    assert measured is not None and measured.cpus == os.cpu_count()
    assert f"# measured on: {measured.text()}" in (out / "launch.sh").read_text()
    assert head["line"] in proc.stdout
    # without --predict the model is calibrated on the best's family here, and its spare speed stated (or why not)
    assert f"spare speed of trial {best['best']['trial']}: calibrating the performance model" in proc.stderr
    spare = best.get("spare_speed")
    if spare is not None:
        assert spare["rate_req_s"] == pytest.approx(rate) and f"# {spare['line']}" in (out / "launch.sh").read_text()
    else:  # the console says why none is stated
        assert f"spare speed of trial {best['best']['trial']}" in proc.stderr and "not stated" in proc.stderr
    if head["gain_over_baseline"] is not None:
        gain = f"{head['gain_over_baseline'] * 100:+.0f}% over vLLM's defaults"
        assert gain in proc.stdout and gain in report
        assert best["gain_over_baseline"] == head["gain_over_baseline"]
        assert set(re.findall(r"[+-]\d+% over vLLM's defaults", report)) == {gain}
    assert "[trial" in proc.stderr and "certify" in proc.stderr and "soak at" in proc.stderr
    assert not vllm_processes(model), "tune left a vLLM process running"
    logs = sorted((out / "logs" / "trial-000").glob("vllm-*.log"))
    assert logs and "[slotune-watchdog] server niceness +10" in logs[0].read_text()


def test_a_resumed_study_keeps_its_certifications(study, vllm_python, tmp_path):
    """Certifications live in the study: a resume with nothing left to run soaks nothing again."""
    model, out, proc, env = study
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = tmp_path / "study"
    shutil.copytree(out, again, ignore=shutil.ignore_patterns("logs"))
    first = json.loads((again / "best.json").read_text())
    resumed = tune_cli(*study_args(model, again, vllm_python, "--resume"), env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "[trial 2]" not in resumed.stderr and "soak at" not in resumed.stderr  # nothing measured again
    best = json.loads((again / "best.json").read_text())
    assert best["certifications"] == first["certifications"] and best["headline"] == first["headline"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bench(port, model_name, model_dir, rate, seconds, tmp_path, env, seed):
    """vllm bench serve at ``rate``; each run on one server needs its own ``seed``: prompts sent again would be
    answered from the prefix cache (results/cpu-fresh-vs-warm-2026-12-04)."""
    out = tmp_path / f"bench-{rate:.3f}.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "vllm_bench_check.py"), "--url", f"http://127.0.0.1:{port}",
         "--model", model_name, "--tokenizer", str(model_dir), "--workload", WORKLOAD, "--output-tokens", OUTPUT_TOKENS,
         "--rate", f"{rate:.4f}", "--seconds", str(seconds), "--slo", SLO, "--seed", str(seed), "--json", str(out)],
        capture_output=True, text=True, timeout=seconds + 300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0 and out.is_file(), proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_launch_sh_holds_the_certified_rate_under_vllms_own_benchmark(study, tmp_path):
    """The promise, checked by another tool for longer: vLLM's `bench serve` client at 95 % of the certified
    rate for 2 minutes keeps the SLO over the run and its last half; at 130 % for as long it does not (the
    certified rate is not far too low either)."""
    model, out, proc, env = study
    best = json.loads((out / "best.json").read_text())
    rate, name = best["certified_rate_req_s"], best["best"]["config"]["served_model_name"]
    assert rate is not None, f"nothing certified to check: {best['headline']['line']}"
    port = _free_port()
    log = tmp_path / "launch.log"  # a file, not a pipe: an undrained pipe blocks the server's logging
    with log.open("w") as sink:
        p = subprocess.Popen(["bash", str(out / "launch.sh")], env={**env, "PORT": str(port)}, stdout=sink,
                             stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        wait_ready(p, log)
        assert "not measured here" not in log.read_text()  # the machine it was measured on: no warning
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions",
                       json={"model": name, "prompt": "w1 w2 w3", "max_tokens": 4}, timeout=60)  # fmt: skip
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 4
        under = _bench(port, name, model, 0.95 * rate, CROSS_CHECK_S, tmp_path, env, seed=11)
        print("\nvllm bench serve at 0.95 x certified:", json.dumps(under))
        assert under["failed"] == 0, under
        over = _bench(port, name, model, 1.3 * rate, OVER_S, tmp_path, env, seed=12)  # not 0.95 x's prompts
        print("vllm bench serve at 1.3 x certified:", json.dumps(over))
    finally:
        stop(p)
    time.sleep(2)
    assert not vllm_processes(model)
    assert under["server"] and over["server"]  # vLLM's /metrics read before and after: the cache was checked
    assert under["cached_prompts_warning"] is None and over["cached_prompts_warning"] is None  # new prompts each
    assert under["held"], f"vllm bench serve did not hold 0.95 x the certified {rate:.3f} req/s: {under}"
    assert over["held"] is False, f"vllm bench serve held 1.3 x the certified {rate:.3f} req/s: far too low: {over}"


def wait_ready(p, log, timeout_s=900):
    """Until launch.sh prints its ready line; fails with the log's tail when it exits or times out first."""
    end = time.monotonic() + timeout_s
    while "ready: http" not in log.read_text():
        assert p.poll() is None and time.monotonic() < end, log.read_text()[-3000:]
        time.sleep(1)


def stop(p):
    """SIGTERM to launch.sh's process group; SIGKILL when it has not ended after a minute."""
    os.killpg(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        raise


def test_retune_unchanged_reverifies(study, vllm_python, tmp_path):
    """From a deployment folder with slotune.yaml, `tune retune` needs no arguments; a soak at 0.9 x the
    certified rate on a fresh server holds — that is what the certified rate promises."""
    model, out, _, env = study
    (tmp_path / "slotune.yaml").write_text(
        f"model: {model}\ngpu: cpu\nslo: {SLO}\nworkload: {WORKLOAD}\nout: {out}\nvllm_python: {vllm_python}\n"
    )
    proc = tune_cli("retune", "--json", env=env, cwd=tmp_path)
    doc = json.loads(proc.stdout)
    assert doc["model_changed"] is False and doc["versions_changed"] is False, proc.stderr[-3000:]
    assert doc["action"] == "reverified" and doc["launch_sh_updated"] is False
    best = json.loads((out / "best.json").read_text())
    assert doc["old"]["rate"] == best["certified_rate_req_s"] and doc["old"]["certified"] is True
    assert doc["new"]["rate"] == pytest.approx(0.9 * best["certified_rate_req_s"])
    assert doc["new"]["seconds"] >= float(SOAK_S) * 0.8  # the study's soak length, inherited
    assert not doc["regression"] and proc.returncode == 0, proc.stderr[-3000:]


def test_retune_detects_same_shape_weight_change(study):
    from launch.fingerprint import model_fingerprint
    from tuner.synthetic import write_model

    model, out, _, env = study
    old = json.loads((out / "best.json").read_text())
    write_model(model, "llama-tiny", seed=1)  # same shapes, new weights
    proc = tune_cli("retune", "--study", str(out), "--trials", "1", "--soak-seconds", "0", "--json", env=env)
    doc = json.loads(proc.stdout)
    assert doc["model_changed"] is True and doc["action"] == "retuned", proc.stderr[-3000:]
    new_study = Path(doc["new"]["study"])
    new_best = json.loads((new_study / "best.json").read_text())
    assert new_best["model"]["fingerprint"] == model_fingerprint(model) != old["model"]["fingerprint"]
    assert proc.returncode == (1 if doc["regression"] else 0)
    # the frozen files are replaced only by a verified winner, and then by the new study's
    now = json.loads((out / "best.json").read_text())
    if doc["launch_sh_updated"]:
        assert doc["new"]["verification"]["slo_met"] and now["model"]["fingerprint"] == model_fingerprint(model)
    else:
        assert now["model"]["fingerprint"] == old["model"]["fingerprint"]
