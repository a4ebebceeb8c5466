"""The quantization interpreter for a user who installed slotune with pip: ``tune quantize --setup``.

llm-compressor pins compressed-tensors 0.19 while vLLM pins 0.17, so it needs an interpreter of its own.
A clone has ``scripts/install-quantize.sh``; a wheel does not ship scripts, so ``--setup`` builds the same
pinned venv into a cache folder (``$XDG_CACHE_HOME/slotune/quantize-venv``, else ``~/.cache/...``), where
``tuner.quantize.interpreter.default_python`` finds it afterwards. It runs ``python -m venv`` and ``pip``
(with the user's pip configuration: a CPU-only torch index, a proxy) through an injected runner.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tuner.errors import UsageError

LLMCOMPRESSOR_SPEC = "llmcompressor==0.14.0.1"  # the version tuner.quantize.llmc was written and tested against
DEFAULT_TORCH_SPEC = "torch==2.13.0"
Runner = Callable[[Sequence[str]], int]


def cache_venv() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "slotune" / "quantize-venv"


def _torch_spec() -> str:
    """The running interpreter's torch version (same CPU/GPU build family), else DEFAULT_TORCH_SPEC."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return "torch==" + version("torch").split("+")[0]
    except PackageNotFoundError:
        return DEFAULT_TORCH_SPEC


def setup_commands(venv: Path, base_python: str, torch_spec: str, llmc_spec: str) -> list[list[str]]:
    """The commands that build the venv (pure: tested without running them)."""
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "install", "--quiet"]
    return [
        [base_python, "-m", "venv", str(venv)],
        [*pip, "--upgrade", "pip"],
        [*pip, torch_spec],
        [*pip, llmc_spec, torch_spec],  # torch stays at the pinned version
        [py, "-m", "pip", "uninstall", "--quiet", "--yes", "torchvision", "torchaudio"],  # break transformers
    ]


def _run(cmd: Sequence[str]) -> int:
    return subprocess.run(list(cmd), stdout=sys.stderr).returncode


def setup_interpreter(
    venv: Path | None = None,
    *,
    run: Runner = _run,
    say: Callable[[str], None] = lambda _m: None,
) -> Path:
    """Build the pinned quantization venv (kept when it already has llm-compressor) and return its python."""
    venv = venv or cache_venv()
    py = venv / "bin" / "python"
    if py.exists() and run([str(py), "-c", "import llmcompressor, transformers"]) == 0:
        say(f"{venv} already has llm-compressor")
        return py
    torch_spec = os.environ.get("TORCH_SPEC") or _torch_spec()
    llmc_spec = os.environ.get("LLMCOMPRESSOR_SPEC") or LLMCOMPRESSOR_SPEC
    say(f"building {venv}: {torch_spec} + {llmc_spec} (a few minutes; pip's own configuration applies)")
    commands = setup_commands(venv, sys.executable, torch_spec, llmc_spec)
    for i, cmd in enumerate(commands):
        code = run(cmd)
        if code != 0 and i < len(commands) - 1:  # the last (uninstalling what is absent) may fail
            raise UsageError(f"building the quantization interpreter failed at '{' '.join(cmd)}' (exit {code})")
    if run([str(py), "-c", "import llmcompressor, transformers"]) != 0:
        raise UsageError(f"{py} does not import llmcompressor after the install; see pip's output above")
    return py
