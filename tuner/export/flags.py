"""The flags of the vLLM version a study was tuned with, to check an export's argv as launch.sh's is.

Sources, first that applies:
1. ``--vllm-help FILE``: the output of ``python -m vllm.entrypoints.openai.api_server --help=all`` of
   that version (taken as that version's: the file cannot say which version printed it);
2. ``--vllm-python PY``: probed (launch.vllm_info); its version must be the study's;
3. the interpreter best.json recorded, if it exists here and still has that version;
4. slotune's probe cache (``vllm-flags-<dist>-<version>.json`` in ``$SLOTUNE_CACHE_DIR``), written
   whenever that version was probed on this machine.
None of them → UsageError saying how to provide one. The argv is never written unchecked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from launch.vllm_flags import VllmInfo
from launch.vllm_info import cache_dir, probe_vllm, vllm_version
from tuner.errors import UsageError


def _from_help_file(path: Path, version: str) -> VllmInfo:
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"--vllm-help {path}: cannot read it ({exc.strerror}); pass an existing file") from None
    info = VllmInfo.from_help_text(text, python="python3", version=version, platform="cuda")
    if not info.has("--model"):
        raise UsageError(
            f"--vllm-help {path}: no option lines of vLLM's API server in it; write it with "
            "`python -m vllm.entrypoints.openai.api_server --help=all > FILE` under vLLM " + version
        )
    return info


def _probe(python: str, version: str, what: str) -> VllmInfo:
    found = vllm_version(python)  # refuse another version before the slow --help=all probe
    if found != version:
        raise UsageError(
            f"{what} {python} has vLLM {found}, but the study was tuned with {version}; "
            f"pass an interpreter with vLLM {version} (or --vllm-help FILE of that version)"
        )
    return probe_vllm(python)


def _from_cache(version: str) -> tuple[VllmInfo, Path] | None:
    candidates = sorted(cache_dir().glob(f"vllm-flags-*-{version}.json"))
    preferred = [p for p in candidates if p.name == f"vllm-flags-vllm-{version}.json"]
    for path in preferred + [p for p in candidates if p not in preferred]:
        try:
            return VllmInfo.from_dict(json.loads(path.read_text())["info"]), path
        except (OSError, ValueError, KeyError):
            continue
    return None


def study_flags(
    version: str, *, help_file: str | None, vllm_python: str | None, recorded_python: str | None
) -> tuple[VllmInfo, str]:
    """(that version's VllmInfo, a phrase saying where its flags came from)."""
    if help_file is not None:
        return _from_help_file(Path(help_file), version), f"--help=all output in {help_file}"
    if vllm_python is not None:
        return _probe(vllm_python, version, "--vllm-python"), f"probed from {vllm_python}"
    if recorded_python and os.access(recorded_python, os.X_OK):
        info = probe_vllm(recorded_python)
        if info.version == version:
            return info, f"probed from {recorded_python} (the study's interpreter)"
    cached = _from_cache(version)
    if cached is not None:
        info, path = cached
        return info, f"slotune's probe cache {path.name} ({info.distribution})"
    raise UsageError(
        f"no flags of vLLM {version} here to check the winner's argv against; pass --vllm-python PY (an "
        f"interpreter with vLLM {version}) or --vllm-help FILE (`python -m vllm.entrypoints.openai.api_server "
        f"--help=all` of vLLM {version})"
    )
