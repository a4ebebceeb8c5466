"""Quantize a model to 4-bit AWQ (W4A16, asymmetric, groups of 128/64/32) and judge it with a quality gate.

    from tuner.quantize.api import QuantizeRecipe, quantize
    result = quantize("models/llama", "models/llama-awq", python=".venv-quant/bin/python")
    result.quality.gate            # "pass" | "fail"  (a failing gate raises unless gate=False)

The heavy work runs in a subprocess under ``python`` — an interpreter with llm-compressor
(scripts/install-quantize.sh), kept apart from vLLM's because their compressed-tensors pins differ —
as ``python -m tuner.quantize.worker`` with this repository on PYTHONPATH. Its progress lines are relayed
to ``on_progress``; its whole log is kept as ``<out_dir>/slotune-quantize.log``. The output is a
compressed-tensors ``pack-quantized`` checkpoint that vLLM loads with no ``--quantization`` flag;
lm_head and the embeddings stay 16-bit, and so do layers the gate restored. The group size is chosen
per model (tuner.quantize.groups) unless the recipe names one.

A finished output is reused when the model's contents, the recipe and the calibration data are
unchanged (tuner.quantize.cache); the cached measurements are re-judged with the current thresholds.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tuner.errors import QuantizeError, UsageError
from tuner.model.spec import ModelSpec
from tuner.quantize import cache
from tuner.quantize.gate import GateThresholds, QualityReport, judge
from tuner.quantize.groups import GroupChoice, choose_group_size
from tuner.quantize.interpreter import BACKENDS, check_backend, default_python, run_worker
from tuner.quantize.recipe import QuantizeRecipe, calibration_texts
from tuner.quantize.text import BUILTIN_VERSION

DAMAGES = ("packed", "scales", "flipped-scales", "zeroed-layer")  # tuner.quantize.metrics.DAMAGES (imports torch)

__all__ = [
    "BACKENDS",
    "GateThresholds",
    "QualityGateError",
    "QualityReport",
    "QuantizeRecipe",
    "QuantizeResult",
    "default_python",
    "quantize",
]

WORKER_VERSION = 1  # bump when the worker's output for the same inputs changes (part of the cache key)
_LOG = "slotune-quantize.log"
DEFAULT_RECIPE = QuantizeRecipe()


@dataclass(frozen=True)
class QuantizeResult:
    out_dir: Path
    quality: QualityReport
    cached: bool
    key: str
    restored_layers: tuple[str, ...]
    measured: dict[str, Any]  # the worker's raw result (timings, versions, calibration source …)
    group: GroupChoice | None = None

    def to_dict(self) -> dict[str, Any]:
        keep = ("backend", "calibration_source", "calibration_samples", "timings_s", "device", "versions", "ignore")
        group = self.group
        return {
            "out_dir": str(self.out_dir),
            "cached": self.cached,
            "key": self.key,
            "group_size": None if group is None else group.group_size,
            "group_size_reason": None if group is None else group.line(),
            "kept_16bit_misfits": [] if group is None else list(group.misfits),
            "restored_layers": list(self.restored_layers),
            **self.quality.to_dict(),
            **{k: self.measured[k] for k in keep if k in self.measured},
        }


class QualityGateError(QuantizeError):
    """The quantized model failed the quality gate; ``result`` holds it and its report."""

    def __init__(self, message: str, result: QuantizeResult) -> None:
        super().__init__(message)
        self.result = result


def _prepare_out(out_dir: Path) -> None:
    if out_dir.exists() and (not out_dir.is_dir() or (any(out_dir.iterdir()) and cache.read_manifest(out_dir) is None)):
        raise UsageError(
            f"output {out_dir} exists and is not a slotune quantization; choose a new or empty "
            "directory (slotune only replaces outputs it wrote itself)"
        )
    out_dir.parent.mkdir(parents=True, exist_ok=True)


def quantize(
    model_dir: str | Path,
    out_dir: str | Path,
    *,
    python: str,
    recipe: QuantizeRecipe = DEFAULT_RECIPE,
    calib: str | None = None,
    samples: int = 128,
    backend: str = "llmcompressor",
    cache_dir: Path | None = None,
    gate: bool = True,
    on_progress: Callable[[str], None] | None = None,
    thresholds: GateThresholds | None = None,
    damage: str | None = None,
) -> QuantizeResult:
    """Quantize ``model_dir`` into ``out_dir`` (or reuse a finished identical run) and judge it.

    Raises UsageError for bad input, QuantizeError when the worker fails (with its log tail) or when
    the gate fails and ``gate`` is True (the output and its report stay in ``out_dir``; ``gate=False``
    accepts it). ``damage`` (one of ``tuner.quantize.metrics.DAMAGES``) is a test seam that corrupts the saved weights
    before the gate measures them; its outputs are never cached.
    """
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    cache_dir = None if cache_dir is None else Path(cache_dir)
    _check_request(model_dir, samples, backend, python, recipe, damage)
    _prepare_out(out_dir)
    group = choose_group_size(ModelSpec.from_dir(model_dir), recipe.group_size)
    if group.misfits and backend == "autoawq":
        raise UsageError(f"the autoawq backend cannot keep layers 16-bit by pattern: {group.line()}")
    recipe = replace(recipe, group_size=group.group_size, ignore=recipe.ignore + group.ignore_patterns())
    if on_progress is not None:
        on_progress(group.line())
    calib_texts, held_texts, calib_hash = calibration_texts(calib, samples, recipe.seed)
    key = cache.cache_key(
        cache.model_fingerprint(model_dir),
        recipe.to_job(),
        calib_hash,
        {"samples": samples, "backend": backend, "worker": WORKER_VERSION, "damage": damage},
    )
    found = cache.lookup(out_dir, None if damage else cache_dir, key)
    cached = found is not None
    if found is None:
        job = _worker_job(model_dir, recipe, calib_texts, held_texts, samples, damage, backend)
        manifest = {
            "key": key,
            "model_dir": str(model_dir.resolve()),
            "recipe": recipe.to_job(),
            "samples": samples,
            "backend": backend,
            "calibration": calib or BUILTIN_VERSION,
        }
        found = _run_fresh(python, job, manifest, out_dir, on_progress)
        if cache_dir is not None and damage is None:
            cache.store(out_dir, cache_dir, key)
    return _judged(found["measured"], thresholds or GateThresholds(), out_dir, cached, key, group, gate)


def _worker_job(
    model_dir: Path,
    recipe: QuantizeRecipe,
    calib_texts: list[str] | None,
    held_texts: list[str],
    samples: int,
    damage: str | None,
    backend: str,
) -> dict[str, Any]:
    """What the worker is told (tuner.quantize.worker); the staging folder is added when it starts."""
    return {
        "model_dir": str(model_dir.resolve()),
        "recipe": recipe.to_job(),
        "calib_texts": calib_texts,
        "held_out_texts": held_texts,
        "samples": samples,
        "max_seq_len": recipe.max_seq_len,
        "held_out": recipe.held_out,
        "seed": recipe.seed,
        "damage": damage,
        "backend": backend,
    }


def _check_request(
    model_dir: Path, samples: int, backend: str, python: str, recipe: QuantizeRecipe, damage: str | None
) -> None:
    """Bad input before any work: a UsageError (a bad ``damage`` is a ValueError: it is a test seam)."""
    if not (model_dir / "config.json").is_file():
        raise UsageError(f"model directory {model_dir} has no config.json")
    if samples < 1:
        raise UsageError(f"--samples {samples} must be >= 1")
    if damage is not None and damage not in DAMAGES:
        raise ValueError(f"damage must be None or one of {DAMAGES}, not {damage!r}")
    check_backend(backend, python)
    if backend == "autoawq" and recipe.symmetric:
        raise UsageError("the autoawq backend writes the zero-point (asymmetric) format only")


def _run_fresh(
    python: str,
    job: dict[str, Any],
    manifest: dict[str, Any],
    out_dir: Path,
    on_progress: Callable[[str], None] | None,
) -> dict[str, Any]:
    """Run the worker into a staging folder beside ``out_dir``, then put it in place with its manifest
    (``manifest`` plus what the worker measured), which it returns. A failed run keeps its log beside."""
    staging = out_dir.with_name(f".{out_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        measured = run_worker(python, {**job, "out_dir": str(staging.resolve())}, staging / _LOG, on_progress)
    except BaseException as exc:
        log, kept = staging / _LOG, out_dir.with_name(f"{out_dir.name}.failed.log")
        if log.is_file():  # keep the log of a failed run next to the output
            shutil.copy2(log, kept)
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, QuantizeError):  # its message names the log: name the one that is kept
            raise QuantizeError(str(exc).replace(str(log), str(kept))) from None
        raise
    found = {**manifest, "measured": measured}
    (staging / cache.MANIFEST).write_text(json.dumps(found, indent=1))
    cache.replace_dir(out_dir, staging)
    return found


def _judged(
    measured: dict[str, Any],
    thresholds: GateThresholds,
    out_dir: Path,
    cached: bool,
    key: str,
    group: GroupChoice,
    gate: bool,
) -> QuantizeResult:
    """The gate's verdict on the worker's measurements; a failed gate raises when ``gate`` is True."""
    report = judge(measured, thresholds)
    result = QuantizeResult(
        out_dir=out_dir,
        quality=report,
        cached=cached,
        key=key,
        restored_layers=report.restored_layers,
        measured=measured,
        group=group,
    )
    if gate and report.gate == "fail":
        raise QualityGateError(
            f"quantized model {out_dir} failed the quality gate: {report.summary()}. "
            "Inspect it, loosen the thresholds, or accept it with --no-gate (gate=False)",
            result,
        )
    return result
