"""The quantization interpreter: finding it, checking it has the backend, running the worker under it.

llm-compressor (and AutoAWQ) pin other compressed-tensors versions than vLLM, so quantization runs in an
interpreter of its own (``tune quantize --setup``, scripts/install-quantize.sh; or this one where it has
llm-compressor) as ``python -m tuner.quantize.worker`` with this
repository on PYTHONPATH. ``run_worker`` relays the worker's progress lines, keeps its whole log and never
lets it outlive an interruption; tuner.quantize.api decides what to run and judges the result.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.errors import QuantizeError, UsageError
from tuner.quantize.setup import cache_venv

REPO_ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("llmcompressor", "autoawq")
_PROGRESS = "slotune-quant: "
_ERROR = "slotune-quant-error: "  # tuner.quantize.worker.ERROR_PREFIX (the worker module imports torch)
_TAIL_LINES = 40


def run_worker(
    python: str, job: dict[str, Any], log_path: Path, on_progress: Callable[[str], None] | None
) -> dict[str, Any]:
    """Run the worker on ``job`` under ``python``; its log goes to ``log_path``; returns its result."""
    with tempfile.TemporaryDirectory(prefix="slotune-quant-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job_file.write_text(json.dumps(job))
        env = {
            **os.environ,
            "TQDM_DISABLE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
        }
        cmd = [python, "-m", "tuner.quantize.worker", "--job", str(job_file), "--result", str(result_file)]
        tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        error: list[str] = []
        try:
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, errors="replace", cwd=tmp
            )
        except OSError as exc:
            raise UsageError(f"cannot run the quantization interpreter {python}: {exc.strerror}") from None
        assert proc.stdout is not None
        with log_path.open("w") as log, proc:
            try:
                for line in proc.stdout:
                    log.write(line)
                    tail.append(line.rstrip("\n"))
                    if line.startswith(_ERROR):
                        error.append(line[len(_ERROR) :].strip())
                    if line.startswith(_PROGRESS) and on_progress is not None:
                        on_progress(line[len(_PROGRESS) :].rstrip("\n"))
            except BaseException:  # interrupted, or on_progress raised: the worker must not outlive us
                proc.kill()
                raise
            code = proc.wait()
        text = "\n".join(tail)
        if code != 0 or not result_file.is_file():
            if "No module named 'llmcompressor'" in text:
                raise UsageError(
                    f"{python} has no llm-compressor; run 'tune quantize --setup' (or scripts/install-quantize.sh) "
                    "and pass its interpreter (--quantize-python or SLOTUNE_QUANTIZE_PYTHON)"
                )
            if error:  # the worker said what failed: one line, the log has the traceback
                raise QuantizeError(f"quantization failed: {error[-1]} (full log: {log_path})")
            last = next((t for t in reversed(tail) if t.strip()), "no output")
            raise QuantizeError(f"quantization worker exited with code {code}: {last.strip()} (full log: {log_path})")
        return json.loads(result_file.read_text())


def check_backend(backend: str, python: str) -> None:
    """UsageError unless ``python`` exists and (for autoawq) imports the backend: never a silent fallback."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}; choose one of: {', '.join(BACKENDS)}")
    if not (shutil.which(python) or Path(python).is_file()):
        raise UsageError(f"quantization interpreter {python} not found; run 'tune quantize --setup'")
    if backend == "autoawq":  # never a silent fallback to the other backend
        probe = subprocess.run([python, "-c", "import awq"], capture_output=True, timeout=300)
        if probe.returncode != 0:
            raise UsageError(
                f"the autoawq backend is not installed in {python} (AutoAWQ is deprecated "
                "upstream): run 'bash scripts/install-quantize.sh --autoawq' and pass its "
                "interpreter, or use --backend llmcompressor (the default)"
            )


def default_python(backend: str = "llmcompressor") -> str | None:
    """The interpreter that quantizes, first found of: ``$SLOTUNE_QUANTIZE_PYTHON``; this interpreter when it
    has llm-compressor; ``.venv-quant/bin/python`` in the repo or the current dir; the venv ``tune quantize
    --setup`` builds (tuner.quantize.setup.cache_venv). None when there is none.

    For the autoawq backend: ``$SLOTUNE_AUTOAWQ_PYTHON``, else ``.venv-awq/bin/python``.
    """
    import importlib.util
    import sys

    var, venv = (
        ("SLOTUNE_AUTOAWQ_PYTHON", ".venv-awq") if backend == "autoawq" else ("SLOTUNE_QUANTIZE_PYTHON", ".venv-quant")
    )
    env = os.environ.get(var)
    if env:
        return env
    if backend == "llmcompressor" and importlib.util.find_spec("llmcompressor") is not None:
        return sys.executable
    candidates = [root / venv / "bin" / "python" for root in (REPO_ROOT, Path.cwd())]
    if backend == "llmcompressor":
        candidates.append(cache_venv() / "bin" / "python")
    return next((str(c) for c in candidates if c.exists()), None)
