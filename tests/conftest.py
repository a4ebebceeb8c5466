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
def real_model() -> Path:
    """SmolLM2-135M-Instruct (``tune make-model --from smollm2-135m-instruct``), built once (~1 min, 270 MB)
    into ``$SLOTUNE_TEST_MODELS`` (default ~/.cache/slotune/test-models) and kept between sessions."""
    from tuner.errors import UsageError
    from tuner.real_model import build_real_model

    cache = Path(os.environ.get("SLOTUNE_TEST_MODELS") or Path.home() / ".cache" / "slotune" / "test-models")
    try:
        return build_real_model("smollm2-135m-instruct", cache / "smollm2-135m-instruct")
    except UsageError as exc:
        require(False, str(exc))
        raise


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


@pytest.fixture(scope="session")
def postgres_url():
    """A real PostgreSQL server on loopback, started for the session (initdb + pg_ctl), stopped after."""
    import shutil
    import socket
    import tempfile

    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    require(bool(initdb and pg_ctl), "PostgreSQL server binaries (initdb, pg_ctl) on PATH")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        require(False, "psycopg (pip install 'slotune[postgres]')")
    base = Path(tempfile.mkdtemp(prefix="slotune-pg-"))  # not under pytest's 0700 tmp: postgres must reach it
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    prefix: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as the postgres user
        shutil.chown(base, "postgres")
        shutil.chown(sock, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(
        [*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *prefix,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(base / "log"),
            "-w",
            "-o",
            f"-p {port} -h 127.0.0.1 -k {sock}",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE slotune")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/slotune"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
