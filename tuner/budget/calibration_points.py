"""Calibration points: what vLLM reported about its memory on real runs, read from
``profiles/calibration/*.yaml`` (one file per device and vLLM version; the format: docs/budget.md), and
the figures a vLLM startup log states, for writing new points."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tuner.errors import ProfileError
from tuner.model.spec import ModelSpec

ROOT = Path(__file__).resolve().parents[2] / "profiles" / "calibration"


@dataclass(frozen=True)
class CalibrationPoint:
    vllm_version: str
    device: str
    shape: dict[str, Any]  # config.json keys (enough for ModelSpec.from_config)
    settings: dict[str, Any]
    reported: dict[str, float]  # weights_gib, activation_gib, non_torch_gib, cudagraph_gib, kv_tokens, …
    source: str = ""
    origin: str = field(default="", compare=False)

    def spec(self) -> ModelSpec:
        return ModelSpec.from_config(self.shape, source=f"{self.origin} ({self.source})")


def load_points(root: Path = ROOT) -> list[CalibrationPoint]:
    """Every calibration point under ``profiles/calibration``; a malformed file is a ProfileError.
    Parsed once per set of file versions (every budget estimate reads them)."""
    files = tuple((path, path.stat().st_mtime_ns) for path in sorted(root.glob("*.yaml")))
    return list(_parse_points(files))


@functools.lru_cache(maxsize=4)
def _parse_points(files: tuple[tuple[Path, int], ...]) -> tuple[CalibrationPoint, ...]:
    points: list[CalibrationPoint] = []
    for path, _mtime in files:
        data = yaml.safe_load(path.read_text()) or {}
        for i, raw in enumerate(data.get("points") or []):
            where = f"{path}: points[{i}]"
            for key in ("vllm_version", "device", "shape", "settings", "reported"):
                if key not in raw and key not in data:
                    raise ProfileError(f"{where}: field '{key}' is missing; see docs/budget.md for the format")
            points.append(
                CalibrationPoint(
                    vllm_version=str(raw.get("vllm_version", data.get("vllm_version"))),
                    device=str(raw.get("device", data.get("device"))),
                    shape=dict(raw["shape"]),
                    settings=dict(raw["settings"]),
                    reported=dict(raw["reported"]),
                    source=str(raw.get("source", "")),
                    origin=where,
                )
            )
    return tuple(points)


_LOG_PATTERNS = {
    "weights_gib": r"Actual usage is ([\d.]+) GiB for weight",
    "activation_gib": r"([\d.]+) GiB for peak activation",
    "non_torch_gib": r"([\d.]+) GiB for non-torch memory",
    "cudagraph_gib": r"([\d.]+) GiB for CUDAGraph memory",
    "cudagraph_estimate_gib": r"CUDA graph pool memory: [\d.]+ GiB \(actual\), ([\d.]+) GiB \(estimated\)",
    "available_kv_gib": r"Available KV cache memory: ([\d.]+) GiB",
    "kv_tokens": r"(?:GPU|CPU) KV cache size: ([\d,]+) tokens",
    "requested_gib": r"Desired GPU memory utilization is \([\d.]+, ([\d.]+) GiB\)",
    "total_gib": r"Free memory on device \([\d.]+/([\d.]+) GiB\)",
}


def parse_log(text: str) -> dict[str, float]:
    """The budget figures a vLLM startup log states (what a calibration point's ``reported`` holds)."""
    out: dict[str, float] = {}
    for key, pattern in _LOG_PATTERNS.items():
        m = re.search(pattern, text)
        if m:
            out[key] = float(m.group(1).replace(",", ""))
    return out
