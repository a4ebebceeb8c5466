"""The exports' start-up check of the machine (tuner.export.machine_check): the wrapper is rendered where the study
recorded its device and not otherwise, and the rendered script, run by a real interpreter, warns in one line for
another machine, stays silent on the same one, and always execs the server in its own process."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from export_data import FORMATS, HELP, ROOT, committed_gpu_studies

from launch.machine import MeasuredOn, device_name
from tuner.export import machine_check
from tuner.export.formats import export_study
from tuner.export.study import read_study
from tuner.export.yaml_text import render_yaml

STUDY = Path("results/h200-llama-3-8b-a30-w4a16-longdoc")  # recorded on an H200 with the A30's memory
SERVER = ["-c", "import os; print('server pid', os.getpid())"]  # stands in for -m vllm.entrypoints...
# the system's interpreter, without torch, runs the script's standard-library path in milliseconds (torch: ~2 s)
PLAIN_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def _export(study: Path, fmt: str) -> str:
    return export_study(study, fmt, vllm_help=str(HELP["0.26.0"]))


def _header(text: str) -> str:
    """The export's comments with its wrapped sentences joined again."""
    return "\n".join(line for line in text.splitlines() if line.startswith("#")).replace("\n#     ", " ")


def _container(docs: list[dict[str, Any]], fmt: str) -> tuple[list[str], list[str]]:
    """(the command before the server's args, the server's args) of an export's server container."""
    if fmt == "compose":
        (svc,) = docs[0]["services"].values()
        return svc["entrypoint"], svc["command"]
    pod = docs[0]["spec"]["template"]["spec"] if fmt == "kubernetes" else docs[0]["spec"]["predictor"]
    return pod["containers"][0]["command"], pod["containers"][0]["args"]


def _helm_init(docs: list[dict[str, Any]]) -> dict[str, Any] | None:
    return docs[0]["servingEngineSpec"]["modelSpec"][0].get("initContainer")


@pytest.mark.parametrize("fmt", ("compose", "kubernetes", "kserve"))
def test_a_recorded_device_wraps_the_unchanged_server_argv(fmt: str) -> None:
    text = _export(ROOT / STUDY, fmt)
    command, args = _container(list(yaml.safe_load_all(text)), fmt)
    assert command[:2] == ["python3", "-c"] and command[3:] == ["NVIDIA H200", "", str(ROOT / STUDY)]
    assert command[2] == machine_check.wrapper_script(pace=False)  # no pace recorded: no watcher
    assert args[:2] == ["-m", "vllm.entrypoints.openai.api_server"]
    measured = "# measured on: NVIDIA H200 (the a30's memory emulated: the rate is this device's speed, not the a30's)"
    assert measured in _header(text)


def test_helm_checks_the_device_in_an_init_container_on_the_servers_gpus() -> None:
    text = _export(ROOT / STUDY, "helm")
    init = _helm_init(list(yaml.safe_load_all(text)))
    assert init is not None and init["name"] == machine_check.INIT_CONTAINER
    assert init["command"][:2] == ["python3", "-c"] and init["command"][3:] == ["NVIDIA H200", "", str(ROOT / STUDY)]
    assert init["resources"] == {"limits": {"nvidia.com/gpu": 1}} and init["image"] == "vllm/vllm-openai:v0.26.0"
    assert "# measured on: NVIDIA H200 (the a30's" in text and "kubectl logs POD -c machine-check" in _header(text)


@pytest.mark.parametrize("study", committed_gpu_studies(), ids=str)
def test_without_a_recorded_device_the_exports_are_as_before(study: Path, tmp_path: Path) -> None:
    """The same study read with and without versions.gpu_name: the device adds the header's machine lines and the
    wrapper (the Helm init container), nothing else."""
    folder = tmp_path / study.name
    folder.mkdir()
    shutil.copy(ROOT / study / "best.json", folder / "best.json")  # what read_study reads
    measured = read_study(folder).measured
    device = json.loads((folder / "best.json").read_text())["versions"]["gpu_name"]
    assert measured is not None and measured.device == device and device.startswith("NVIDIA H")
    formats = [f for f in FORMATS if f != "helm" or read_study(folder).config.enable_prefix_caching is not None]
    recorded = {fmt: _export(folder, fmt) for fmt in formats}
    doc = json.loads((folder / "best.json").read_text())
    del doc["versions"]["gpu_name"]
    (folder / "best.json").write_text(json.dumps(doc))
    for fmt in formats:
        before = _export(folder, fmt)
        assert "measured on" not in before and "slotune: WARNING" not in before
        lines = render_yaml(machine_check.header_lines(measured, init_container=fmt == "helm"), [])
        assert lines in recorded[fmt]
        head, body = before.split("\n#\n", 1)
        assert recorded[fmt].startswith(head + "\n" + lines + "#\n")
        docs = list(yaml.safe_load_all(recorded[fmt]))
        if fmt == "helm":
            del docs[0]["servingEngineSpec"]["modelSpec"][0]["initContainer"]
        else:
            _container(docs, fmt)[0][:] = ["python3"]
        assert docs == list(yaml.safe_load_all(before)), fmt


def _run(
    script: str, *argv: str, python: str = PLAIN_PYTHON, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], int]:
    """The rendered wrapper run by a real interpreter; (its result, its pid)."""
    proc = subprocess.Popen([python, "-c", script, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def _here(python: str = PLAIN_PYTHON) -> str:
    """This machine's device as ``python`` sees it (launch.machine.device_name, run there)."""
    code = "from __future__ import annotations\n" + inspect.getsource(device_name) + "\nprint(device_name())"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def _rendered_script() -> str:
    command, _ = _container(list(yaml.safe_load_all(_export(ROOT / STUDY, "kubernetes"))), "kubernetes")
    return command[2]


@pytest.mark.parametrize("python", [PLAIN_PYTHON, sys.executable], ids=["stdlib", "with-torch"])
def test_the_rendered_check_warns_in_one_line_for_another_device_and_execs_the_server(python: str) -> None:
    r, pid = _run(_rendered_script(), "NVIDIA Fake GPU 9000", "", "results/some-study", *SERVER, python=python)
    assert r.returncode == 0 and r.stdout == f"server pid {pid}\n"  # exec'd: the server kept the wrapper's process
    (line,) = r.stderr.splitlines()
    assert line.startswith("slotune: WARNING: the capacity in this deployment's header was measured on NVIDIA Fake")
    assert f"this machine is {_here(python)}" in line and line.endswith("tune retune --study results/some-study")


def test_the_rendered_check_is_silent_on_the_machine_measured() -> None:
    r, pid = _run(_rendered_script(), _here(), str(os.cpu_count()), "results/some-study", *SERVER)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"server pid {pid}\n", "")


def test_the_rendered_check_names_another_cpu_count() -> None:
    here = _here()
    if not here.startswith("cpu: "):
        pytest.skip("the CPU count is compared on CPU devices only")
    r, _ = _run(_rendered_script(), here, str((os.cpu_count() or 1) * 4), "results/some-study", *SERVER)
    assert f"this machine has {os.cpu_count()} CPUs, not {(os.cpu_count() or 1) * 4}" in r.stderr


def test_without_a_server_argv_the_check_alone_runs_and_exits_0() -> None:
    """Helm's init container: the warning, exit 0 (the pod goes on to start the server)."""
    r, _ = _run(_rendered_script(), "NVIDIA Fake GPU 9000", "", "results/some-study")
    assert r.returncode == 0 and r.stdout == "" and r.stderr.count("slotune: WARNING:") == 1


def _with_pace(tmp_path: Path, pace_ms: float) -> Path:
    """The committed study with its winner's pace in best.json, as a study of today writes it."""
    folder = tmp_path / "paced"
    folder.mkdir()
    doc = json.loads((ROOT / STUDY / "best.json").read_text())
    doc["best"]["pace_ms"] = pace_ms
    (folder / "best.json").write_text(json.dumps(doc))
    return folder


def test_the_spare_speed_best_json_states_sets_the_slowdown_the_exports_warn_at(tmp_path: Path) -> None:
    """As launch.sh does (launch.pace.pace_tolerance): past the stated rate's spare speed, not inside the card's
    spread."""
    folder = _with_pace(tmp_path, 25.0)
    doc = json.loads((folder / "best.json").read_text())
    run_h = json.loads((ROOT / "results" / "gpu-run-h-edge-rule-2026-12-06" / "best.json").read_text())
    doc["spare_speed"] = {**run_h["spare_speed"], "trial": doc["best"]["trial"]}  # 1.05: "at most about 5 %"
    (folder / "best.json").write_text(json.dumps(doc))
    assert read_study(folder).measured == MeasuredOn("NVIDIA H200", None, "a30", 25.0, 1.05)
    command, _ = _container(list(yaml.safe_load_all(_export(folder, "kubernetes"))), "kubernetes")
    assert command[3:] == ["NVIDIA H200", "", str(folder), "25.000", "1.08", "8000", "llama-3-8b"]


def test_a_pace_stated_by_best_json_is_timed_again_beside_the_server(tmp_path: Path) -> None:
    folder = _with_pace(tmp_path, 25.0)
    assert read_study(folder).measured == MeasuredOn("NVIDIA H200", None, "a30", 25.0)
    text = _export(folder, "kubernetes")
    command, _ = _container(list(yaml.safe_load_all(text)), "kubernetes")
    assert command[2] == machine_check.wrapper_script(pace=True)
    assert command[3:] == ["NVIDIA H200", "", str(folder), "25.000", "1.25", "8000", "llama-3-8b"]
    assert "a fixed request alone at 25.0 ms a token (timed again at start)" in _header(text)
    assert "once /health answers, where that request is more than 1.25x slower" in _header(text)
    helm = _export(folder, "helm")  # the init container runs before the server: no pace there
    init = _helm_init(list(yaml.safe_load_all(helm)))
    assert init is not None and init["command"][2] == machine_check.wrapper_script(pace=False)
    assert "timed again" not in helm and "pace there: a fixed request alone at 25.0 ms a token" in _header(helm)


class _FakeServer(BaseHTTPRequestHandler):
    """/health and /v1/completions answering exactly the tokens asked (what launch.pace times)."""

    def do_GET(self) -> None:
        self._answer(200 if self.path == "/health" else 404, {})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        short = body["model"] == "miscounts"  # answers a token fewer than asked: the pace cannot be timed
        self._answer(200, {"usage": {"completion_tokens": body["max_tokens"] - short}})

    def _answer(self, status: int, doc: dict[str, Any]) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeServer)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.mark.parametrize(
    ("pace", "name", "said"),
    [
        ("0.000001", "tiny", "x slower): the capacity in this deployment's header was not measured at this pace"),
        ("1000000", "tiny", " ms a token here, 1000000.0 where measured (a warning above 1.25x)"),
        ("1000000", "miscounts", "could not be timed here (it failed or answered another count)"),
    ],
    ids=["slower", "within", "untimed"],
)
def test_the_rendered_watcher_says_how_the_pace_compares(fake_port: int, pace: str, name: str, said: str) -> None:
    """The watcher is a child of the server's process once it execs: the stand-in server waits for it. One line:
    a warning where slower, or not timed; the figures otherwise."""
    argv = (_here(), str(os.cpu_count()), "results/some-study", pace, "1.25", str(fake_port), name)
    r, _ = _run(machine_check.wrapper_script(pace=True), *argv, "-c", "import os; print('server', os.wait()[1])")
    assert r.returncode == 0 and r.stdout == "server 0\n"
    (line,) = r.stderr.splitlines()
    assert said in line, line
    assert line.startswith("slotune: WARNING: ") is (name == "miscounts" or pace == "0.000001"), line
