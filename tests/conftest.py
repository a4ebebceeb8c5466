"""Shared fixtures. End-to-end tests (marker ``vllm``) start real vLLM (the CPU build) on loopback.

Environment:
- ``SLOTUNE_VLLM_PYTHON``: interpreter whose vLLM is launched (default: this one).
- ``SLOTUNE_REQUIRE_ALL=1`` (set by .ci/run): a missing vLLM / torch / quantize interpreter / PostgreSQL
  is a test *failure*, not a skip, so CI can never go green by skipping what it should run.

Markers (docs/testing.md): ``vllm`` starts a server, ``quantize`` runs a real quantization, ``postgres``
starts PostgreSQL; ``make test-fast`` deselects all three. A test that uses a fixture needing one of them
without the marker is refused at collection, and an unmarked test times out after 60 s.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # launch.server imports httpx: not at every pytest start (the controller's included)
    from launch.server import LaunchedServer

REQUIRE_ALL = os.environ.get("SLOTUNE_REQUIRE_ALL") == "1"
UNIT_TIMEOUT_S = 60
HEAVY_MARKERS = ("vllm", "quantize", "postgres")
# heavy modules whose tests run one after another on one worker, longest first (docs/testing.md has the times)
# heavy tests that share an expensive module- or session-scoped fixture (a study, quantization outputs) run on
# one worker, in this order (longest chain first); docs/testing.md has the times
SHARED_SETUP = ("tests/test_e2e_slice.py", "tests/quantize/", "tests/test_e2e_tune.py", "tests/budget/test_vllm_cpu.py")
# unit modules whose setup is worth paying once, not once per worker (the fake server's 4 s of load, one start
# of each validator over every study, the property tests' warm-up, transformers' import for the tokenizer
# tests): each is a group
UNIT_SHARED_SETUP = (
    "tests/loadtest/test_timing_socket.py",
    "tests/export/test_validate.py",
    "tests/test_cli_properties.py",
    "tests/loadtest/test_workload.py",
)
# unit modules that hold the longest unit tests (2-5 s each, docs/testing.md): started right after the unit
# groups, so that the two workers end on short tests rather than one of these
UNIT_LONGEST = (
    "tests/tuner/test_study_storage.py",
    "tests/tuner/test_resume_faults.py",
    "tests/perfmodel/test_perfmodel_rank.py",
    "tests/loadtest/test_steady.py",
    "tests/launch/test_launch_script.py",
    "tests/tuner/test_hopeless.py",
    "tests/perfmodel/test_perfmodel_committed_studies.py",
)
# unit modules that judge the load generator's timing over a real socket: started once the workers are warm
# (after the groups and the longest modules, whose first imports and validator starts load both cores); first
# in the run, 2 runs of ~25 (one writing its bytecode cold) saw a p99 near 60 ms against the 50-ms bound
UNIT_TIMING = ("tests/loadtest/test_timing_socket.py",)
# fixtures that start a server or run a quantization, and the marker a test using them must carry
NEEDS_MARKER = {
    "tiny_server": "vllm",
    "vllm_server": "vllm",
    "vllm_completion": "vllm",
    "cpu_kernels": "vllm",
    "quant_python": "quantize",
    "awq_python": "quantize",
    "postgres_url": "postgres",
}


def require(ok: bool, what: str) -> None:
    """Skip (locally) or fail (CI) when a test's real dependency is missing."""
    if ok:
        return
    if REQUIRE_ALL:
        pytest.fail(f"required for this test but missing: {what}")
    pytest.skip(f"missing: {what}")


def require_module(name: str, install: str) -> None:
    """``require`` for an importable module (without importing it)."""
    require(importlib.util.find_spec(name) is not None, f"the Python module {name} ({install})")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for fixture, marker in NEEDS_MARKER.items():
            if fixture in fixtures and item.get_closest_marker(marker) is None:
                raise pytest.UsageError(f"{item.nodeid} uses the fixture {fixture}: mark it @pytest.mark.{marker}")
        heavy = any(item.get_closest_marker(m) for m in HEAVY_MARKERS)
        if item.get_closest_marker("long") is not None and not heavy:  # `long` only sorts heavy tests
            raise pytest.UsageError(f"{item.nodeid} is marked long: mark it vllm, quantize or postgres too")
        if not heavy and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_S))
    items.sort(key=_start_order)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Whatever lives when a test starts (modules, fixtures, earlier tests' leftovers) leaves the cyclic GC's
    view (``gc.freeze``): the load generator's ``gc.collect()`` before each level, and the automatic full
    collections, then walk only what this test made; they walked 300-400k objects, ~10 s of a 2-worker unit
    run. The test's own garbage is collected as before; an earlier test's uncollected cycles are kept."""
    gc.freeze()


def pytest_collectstart(collector: pytest.Collector) -> None:
    """The same as each module is collected: its imports add to what is frozen (~0.8 s of a worker's collection)."""
    gc.freeze()


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test's pytest-xdist group (``_shared_setup``), set as it is collected (pytest-xdist reads the markers
    in its own ``pytest_collection_modifyitems``, which may run before ours). Other tests have none: each goes
    to whichever worker is free."""
    group = _shared_setup(item)
    if group is not None:
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_configure(config: pytest.Config) -> None:
    """``--dist loadgroup`` on a pytest whose pytest-xdist drops the groups silently (pytest 9.2 with
    pytest-xdist 3.8, pytest-xdist#1386) would start the shared servers once per worker: refuse it."""
    from importlib.metadata import version

    if getattr(config.option, "dist", "no") != "loadgroup":
        return
    pytest_v, xdist_v = (tuple(int(x) for x in version(d).split(".")[:2]) for d in ("pytest", "pytest-xdist"))
    if pytest_v >= (9, 2) and xdist_v <= (3, 8):
        raise pytest.UsageError("pytest-xdist 3.8 ignores xdist_group on pytest 9.2 (pytest-xdist#1386): "
                                "pip install 'pytest<9.2' (pyproject.toml pins it)")  # fmt: skip


def _shared_setup(item: pytest.Item) -> str | None:
    """The setup a test shares with others: ``tiny_server`` (one compile-path server per run, not one per
    worker), a heavy module's or package's fixtures listed in SHARED_SETUP, or a unit module's listed in
    UNIT_SHARED_SETUP; None for the rest."""
    path = item.nodeid.split("::", 1)[0]
    if not any(item.get_closest_marker(m) for m in HEAVY_MARKERS):
        return path if path in UNIT_SHARED_SETUP else None
    if "tiny_server" in getattr(item, "fixturenames", ()):
        return "tiny_server"
    return next((prefix for prefix in SHARED_SETUP if path.startswith(prefix)), None)


def _start_order(item: pytest.Item) -> int:
    """Longest chains first (``make ci`` and ``make test-fast`` run ``--dist loadgroup
    --no-loadscope-reorder``): a worker takes the next group in this order as it frees up; the unit tests
    come last and fill in behind, the grouped ones first, then the longest, then the timing ones."""
    group = _shared_setup(item)
    if group in SHARED_SETUP:
        return SHARED_SETUP.index(group)
    if group == "tiny_server":
        return len(SHARED_SETUP)
    if any(item.get_closest_marker(m) for m in HEAVY_MARKERS):
        return len(SHARED_SETUP) + 1
    path = item.nodeid.split("::", 1)[0]
    if path in UNIT_TIMING:
        return len(SHARED_SETUP) + 4
    if group is not None:
        return len(SHARED_SETUP) + 2
    return len(SHARED_SETUP) + (3 if path in UNIT_LONGEST else 5)


@pytest.fixture(scope="session")
def vllm_python() -> str:
    py = os.environ.get("SLOTUNE_VLLM_PYTHON", sys.executable)
    ok = subprocess.run([py, "-c", "import vllm"], capture_output=True, timeout=120).returncode == 0
    require(ok, f"vLLM importable from {py} (set SLOTUNE_VLLM_PYTHON or run scripts/install-cpu.sh)")
    return py


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random-weight Llama with a 4,096-entry WordLevel tokenizer."""
    require_module("torch", "scripts/install-cpu.sh")
    from tuner.synthetic import write_model

    return write_model(tmp_path_factory.mktemp("models") / "tiny-llama", "llama-tiny")


@pytest.fixture(scope="session")
def real_model() -> Path:
    """SmolLM2-135M-Instruct (``tune make-model --from smollm2-135m-instruct``), built once (~1 min, 270 MB)
    into ``$SLOTUNE_TEST_MODELS`` (default ~/.cache/slotune/test-models) and kept between sessions."""
    from tuner.errors import UsageError
    from tuner.model.real_model import build_real_model

    cache = Path(os.environ.get("SLOTUNE_TEST_MODELS") or Path.home() / ".cache" / "slotune" / "test-models")
    try:
        return build_real_model("smollm2-135m-instruct", cache / "smollm2-135m-instruct")
    except UsageError as exc:
        require(False, str(exc))
        raise


@pytest.fixture(scope="session")
def cpu_env() -> dict[str, str]:
    """Environment for vLLM-CPU: small KV space, offline, no usage stats, and ``VLLM_CPU_CI_ENV=1``:
    vLLM's own CI switch (dynamo with the eager backend, no warm-up compile), ~32 s a start on the 2-core
    machine instead of ~80 s cold. Only ``tiny_server`` keeps vLLM's default compile path."""
    return {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_DO_NOT_TRACK": "1",
        "VLLM_CPU_CI_ENV": "1",
    }


@contextlib.contextmanager
def _vllm_start_lock() -> Iterator[None]:
    """Hold /tmp/slotune-vllm.lock (shared with manual runs) while a server boots."""
    with open("/tmp/slotune-vllm.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def vllm_start_lock() -> Callable[[], contextlib.AbstractContextManager[None]]:
    return _vllm_start_lock


@dataclass(frozen=True)
class TinyServer:
    """The session's shared server and what its start left behind (read before any test used it)."""

    server: LaunchedServer
    progress: tuple[str, ...]
    log_after_start: str


@pytest.fixture(scope="session")
def tiny_server(
    vllm_python: str, tiny_model: Path, cpu_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TinyServer]:
    """One real vLLM-CPU server for every test that only reads from it (launch's read-back, the load
    generator): the tiny Llama as ``tiny``, ``--max-model-len 2048``, 32 sequences, prefix caching on.
    The one server of the suite on vLLM's default compile path (no ``VLLM_CPU_CI_ENV``). Niced from its
    start, as the tuner's trials on the cpu profile are and as every server of the suite is
    (``CPU_SERVER_NICE``): a server at full priority on one worker starves the niced trial server that the other
    worker measures, and vLLM's busy-polling engine queues the load generator (docs/testing.md)."""
    from launch.config import ServeConfig
    from launch.server import group_members, start_server
    from tuner.trial.context import CPU_SERVER_NICE

    env = {k: v for k, v in cpu_env.items() if k != "VLLM_CPU_CI_ENV"}
    config = ServeConfig(model=str(tiny_model), served_model_name="tiny", max_model_len=2048, max_num_seqs=32)
    progress: list[str] = []
    with _vllm_start_lock():
        server = start_server(
            config,
            python=vllm_python,
            log_dir=tmp_path_factory.mktemp("tiny-server"),
            base_env=env,
            on_progress=progress.append,
            startup_timeout_s=400,
            nice=CPU_SERVER_NICE,
        )
    with server:
        yield TinyServer(server, tuple(progress), server.log_path.read_text())
    # the stop of a healthy server is complete (the crash and timeout tests stop servers in other states)
    assert group_members(server.pgid) == [], f"vLLM processes left after stop(): {group_members(server.pgid)}"


@pytest.fixture(scope="session")
def postgres_url():
    """A real PostgreSQL server on loopback, started for the session (initdb + pg_ctl), stopped after."""
    import shutil
    import socket
    import tempfile

    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    require(bool(initdb and pg_ctl), "PostgreSQL server binaries (initdb, pg_ctl) on PATH")
    require_module("psycopg", "pip install 'slotune[postgres]'")
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
