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
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tuner.errors import QuantizeError, UsageError
from tuner.model_spec import ModelSpec
from tuner.quantize import cache
from tuner.quantize.gate import GateThresholds, QualityReport, judge
from tuner.quantize.groups import GroupChoice, choose_group_size
from tuner.quantize.interpreter import BACKENDS, check_backend, default_python, run_worker
from tuner.quantize.text import BUILTIN_VERSION, jsonl_texts

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

SCHEMES = {"w4a16": 4}  # scheme name -> weight bits (activations stay 16-bit)
WORKER_VERSION = 1  # bump when the worker's output for the same inputs changes (part of the cache key)
_LOG = "slotune-quantize.log"


@dataclass(frozen=True)
class QuantizeRecipe:
    """What to quantize and how. ``ignore`` are module names (or ``re:`` patterns) left 16-bit;
    ``group_size`` None: chosen per model (tuner.quantize.groups)."""

    scheme: str = "w4a16"
    group_size: int | None = None
    symmetric: bool = False
    ignore: tuple[str, ...] = ("lm_head",)
    restore_below: float = 0.99  # per-layer output cosine under which a layer is restored to 16-bit
    max_restore_fraction: float = 0.25  # at most this share of the quantized layers is restored
    max_rounds: int = 3  # quantization rounds (the first + re-quantizations after restoring layers)
    max_seq_len: int = 512
    held_out: int = 16  # built-in held-out sequences for the gate
    seed: int = 0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise UsageError(f"unknown scheme {self.scheme!r}; supported: {', '.join(SCHEMES)}")
        if self.group_size is not None and (self.group_size <= 0 or self.group_size % 32):
            raise UsageError(f"group size {self.group_size} must be a positive multiple of 32 (e.g. 128)")
        if not 0.0 <= self.restore_below < 1.0:
            raise UsageError(f"restore_below {self.restore_below} must be in [0, 1)")
        if self.max_rounds < 1 or self.held_out < 1 or self.max_seq_len < 16:
            raise UsageError("max_rounds and held_out must be >= 1 and max_seq_len >= 16")

    def to_job(self) -> dict[str, Any]:
        return {**asdict(self), "ignore": list(self.ignore), "bits": SCHEMES[self.scheme]}


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


def _calibration(calib: str | None, samples: int, seed: int) -> tuple[list[str] | None, list[str], str]:
    """(calibration texts or None for built-in, held-out texts from the user's file, calibration hash)."""
    if calib is None:
        return None, [], BUILTIN_VERSION
    path = Path(calib)
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        texts = jsonl_texts(rows)
    except OSError as exc:
        raise UsageError(f"cannot read calibration file {calib}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(
            f"calibration file {calib}: {exc} (one JSON object per line with 'text' or 'messages')"
        ) from None
    if len(texts) < 2:
        raise UsageError(f"calibration file {calib} has {len(texts)} usable row(s); it needs at least 2")
    import random

    random.Random(seed).shuffle(texts)
    n_held = max(1, min(16, len(texts) // 8))  # a slice of the user's data joins the held-out set
    return texts[n_held:][:samples], texts[:n_held], cache.file_hash(path)


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
    recipe: QuantizeRecipe = QuantizeRecipe(),
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
    if not (model_dir / "config.json").is_file():
        raise UsageError(f"model directory {model_dir} has no config.json")
    if samples < 1:
        raise UsageError(f"--samples {samples} must be >= 1")
    if damage is not None and damage not in DAMAGES:
        raise ValueError(f"damage must be None or one of {DAMAGES}, not {damage!r}")
    check_backend(backend, python)
    if backend == "autoawq" and recipe.symmetric:
        raise UsageError("the autoawq backend writes the zero-point (asymmetric) format only")
    _prepare_out(out_dir)
    group = choose_group_size(ModelSpec.from_dir(model_dir), recipe.group_size)
    if group.misfits and backend == "autoawq":
        raise UsageError(f"the autoawq backend cannot keep layers 16-bit by pattern: {group.line()}")
    recipe = replace(recipe, group_size=group.group_size, ignore=recipe.ignore + group.ignore_patterns())
    if on_progress is not None:
        on_progress(group.line())
    calib_texts, held_texts, calib_hash = _calibration(calib, samples, recipe.seed)
    key = cache.cache_key(
        cache.model_fingerprint(model_dir),
        recipe.to_job(),
        calib_hash,
        {"samples": samples, "backend": backend, "worker": WORKER_VERSION, "damage": damage},
    )
    found = cache.lookup(out_dir, None if damage else cache_dir, key)
    cached = found is not None
    if found is None:
        staging = out_dir.with_name(f".{out_dir.name}.partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        job = {
            "model_dir": str(model_dir.resolve()),
            "out_dir": str(staging.resolve()),
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
        try:
            measured = run_worker(python, job, staging / _LOG, on_progress)
        except BaseException as exc:
            log, kept = staging / _LOG, out_dir.with_name(f"{out_dir.name}.failed.log")
            if log.is_file():  # keep the log of a failed run next to the output
                shutil.copy2(log, kept)
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, QuantizeError):  # its message names the log: name the one that is kept
                raise QuantizeError(str(exc).replace(str(log), str(kept))) from None
            raise
        found = {
            "key": key,
            "model_dir": str(model_dir.resolve()),
            "recipe": recipe.to_job(),
            "samples": samples,
            "backend": backend,
            "calibration": calib or BUILTIN_VERSION,
            "measured": measured,
        }
        (staging / cache.MANIFEST).write_text(json.dumps(found, indent=1))
        cache.replace_dir(out_dir, staging)
        if cache_dir is not None and damage is None:
            cache.store(out_dir, cache_dir, key)
    measured = found["measured"]
    report = judge(measured, thresholds or GateThresholds())
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
