"""Fixtures for the quantization tests: the quantization interpreter and one real quantization.

``SLOTUNE_QUANTIZE_PYTHON`` names the interpreter with llm-compressor (scripts/install-quantize.sh);
without it these tests skip locally and fail under ``SLOTUNE_REQUIRE_ALL=1`` (CI).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require
from tuner.quantize import QuantizeRecipe, QuantizeResult, quantize

# every layer measures under 0.9999, so restoration always runs: the worst layers (a quarter of the
# quantized Linears, fused siblings together) are restored and the model is quantized a second time
# (after which the restoration budget is spent). The same as `tune quantize --restore-below 0.9999`.
RESTORING = QuantizeRecipe(restore_below=0.9999)
SAMPLES = 16


@pytest.fixture(scope="session")
def quant_args() -> dict:
    """The recipe and sample count of the shared quantization (``quantized``)."""
    return {"recipe": RESTORING, "samples": SAMPLES}


@pytest.fixture(scope="session")
def quant_python() -> str:
    py = os.environ.get("SLOTUNE_QUANTIZE_PYTHON", "")
    ok = bool(py) and Path(py).exists() and subprocess.run(
        [py, "-c", "import llmcompressor, transformers"], capture_output=True, timeout=300).returncode == 0
    require(ok, "an interpreter with llm-compressor in SLOTUNE_QUANTIZE_PYTHON (bash "
                "scripts/install-quantize.sh, then export SLOTUNE_QUANTIZE_PYTHON=.venv-quant/bin/python)")
    return py


@pytest.fixture(scope="session")
def quant_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("quant")
    return {"out": root / "out", "cache": root / "cache", "root": root}


@pytest.fixture(scope="session")
def quantized(quant_python: str, tiny_model: Path, quant_dirs: dict[str, Path]) -> QuantizeResult:
    """The tiny Llama quantized once (with layer restoration), shared by the tests that inspect it."""
    lines: list[str] = []
    result = quantize(tiny_model, quant_dirs["out"], python=quant_python, recipe=RESTORING, samples=SAMPLES,
                      cache_dir=quant_dirs["cache"], on_progress=lines.append)
    assert lines and lines[-1] == "done", lines
    print("\nquantized tiny-llama:", result.quality.summary())
    return result
