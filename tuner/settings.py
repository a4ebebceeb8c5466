"""TuneSettings: the resolved settings of one ``tune`` run (built-in defaults < slotune.yaml < flags).

``FIELDS`` is the single description of every setting: its type, unit/valid values and help. The
project file reader (tuner.project), ``tune init`` and the CLI flags all use it, so they cannot drift.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from tuner.errors import UsageError


@dataclass(frozen=True)
class Field:
    type: type
    help: str
    default: Any = None


FIELDS: dict[str, Field] = {
    "model": Field(str, "model directory (config.json + weights), e.g. ./my-7b"),
    "quantized_model": Field(str, "an existing quantized variant of the model; searched as a knob"),
    "draft_model": Field(str, "draft model directory for speculative decoding (same tokenizer)"),
    "quantize": Field(str, "quantize first: 'awq' (4-bit AWQ with a quality gate) or 'none'", "none"),
    "quantize_python": Field(str, "interpreter with llm-compressor (default: .venv-quant/bin/python)"),
    "quantize_samples": Field(int, "calibration sequences for --quantize awq (as `tune quantize --samples`)", 128),
    "gpu": Field(
        str,
        "GPU profile: a10, a30, l4, l40s, a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, "
        "rtx4090, cpu, auto, or a YAML file",
    ),
    "emulate_on": Field(
        str, "GPU profile of the device really used when --gpu names a smaller one (memory is emulated, speed is not)"
    ),
    "gpu_price": Field(
        float, "US$ per GPU-hour for the cost per token (default: the GPU profile's hourly_price_usd, if any)"
    ),
    "slo": Field(str, "SLOs, e.g. ttft_p95=2s,tpot_p99=80ms (metrics ttft/tpot/itl/e2e, p50..p99.9, s|ms)"),
    "workload": Field(str, "built-in workload (chat, code, summarize, longdoc) or a YAML/JSONL file", "chat"),
    "trials": Field(int, "total trials in the study (a resumed study runs only the missing ones)", 20),
    "out": Field(str, "output folder (default results/<model>-<gpu>-<workload>)"),
    "vllm_python": Field(str, "interpreter whose vLLM is launched (default: the current one)"),
    "docker_image": Field(str, "launch vLLM in this Docker image instead of an interpreter"),
    "storage": Field(str, "Optuna storage URL, e.g. postgresql://user@host/db (default: sqlite in --out)"),
    "devices": Field(str, "GPU indices for one trial each at a time, e.g. 0,1,2,3 (default: one trial at a time)"),
    "load_format": Field(str, "vLLM --load-format, e.g. 'dummy' for random weights generated on the device"),
    "seed": Field(int, "seed for the sampler and the load generator", 0),
    "level_seconds": Field(float, "seconds of load per measured rate level (default by profile: cpu 8, GPU 20)"),
    "soak_seconds": Field(
        float,
        "seconds the winner (and vLLM's defaults) are held at their stated rate on a fresh server to certify "
        "it (default by profile: cpu 120, GPU 180; 0: no certification, the rates stay the search's estimates)",
    ),
    "certify": Field(
        str,
        "whom the certifying soaks hold to their stated rate: 'all' (the best and vLLM's defaults, for a "
        "like-for-like gain), 'best', or 'baseline' (e.g. one per call where a machine is lent briefly)",
        "all",
    ),
    "output_tokens": Field(int, "fix every request's output length (max_tokens + ignore_eos)"),
    "startup_timeout": Field(float, "seconds to wait for a vLLM server to become healthy", 900.0),
    "time_budget": Field(
        float,
        "seconds for this run: no new trial starts when a typical (median) trial would "
        "overrun it, and a started trial whose measurement would is given up (the study "
        "stays resumable)",
    ),
    "confirm": Field(
        int,
        "after the search, measure the best config and its rival (vLLM's defaults, else the "
        "runner-up) N more times each with fresh servers; report the gain on the means",
        0,
    ),
    "overlap_startup": Field(
        bool,
        "start the next trial's server while the current one is measured (only one "
        "is measured at a time; needs memory for two servers, e.g. an emulated GPU)",
        False,
    ),
}


@dataclass(frozen=True)
class TuneSettings:
    model: str
    gpu: str
    slo: str
    quantized_model: str | None = None
    draft_model: str | None = None
    quantize: str = "none"
    quantize_python: str | None = None
    quantize_samples: int = 128
    emulate_on: str | None = None
    gpu_price: float | None = None
    workload: str = "chat"
    trials: int = 20
    out: str | None = None
    vllm_python: str = sys.executable
    docker_image: str | None = None
    storage: str | None = None
    devices: str | None = None
    load_format: str | None = None
    seed: int = 0
    level_seconds: float | None = None
    soak_seconds: float | None = None
    certify: str = "all"
    output_tokens: int | None = None
    startup_timeout: float = 900.0
    time_budget: float | None = None
    overlap_startup: bool = False
    confirm: int = 0
    resume: bool = False
    config_file: str | None = None

    def out_dir(self) -> Path:
        if self.out:
            return Path(self.out)
        gpu = Path(self.gpu).stem if self.gpu.endswith((".yaml", ".yml")) else self.gpu
        return Path("results") / f"{Path(self.model).name}-{gpu}-{Path(self.workload).stem}"

    def device_list(self) -> list[str | None]:
        if not self.devices:
            return [None]
        return [d.strip() for d in self.devices.split(",") if d.strip()]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve(file_values: dict[str, Any], flag_values: dict[str, Any], *, source: str = "") -> TuneSettings:
    """Built-in defaults < project file < command-line flags (flags that were given, i.e. not None)."""
    merged: dict[str, Any] = {}
    for name, f in FIELDS.items():
        if f.default is not None:
            merged[name] = f.default
    merged.update({k: v for k, v in file_values.items() if v is not None})
    known = {f.name for f in fields(TuneSettings)}
    merged.update({k: v for k, v in flag_values.items() if v is not None and k in known})
    missing = [k for k in ("model", "gpu", "slo") if not merged.get(k)]
    if missing:
        where = f" (not in {source} either)" if source else " (no slotune.yaml found; `tune init` writes one)"
        raise UsageError(f"missing {', '.join('--' + m.replace('_', '-') for m in missing)}{where}")
    if merged.get("quantize") not in ("awq", "none"):
        raise UsageError(f"quantize must be 'awq' or 'none', got {merged.get('quantize')!r}")
    if int(merged.get("trials", 1)) < 1:
        raise UsageError(f"trials must be at least 1, got {merged.get('trials')}")
    if int(merged.get("confirm", 0) or 0) < 0:
        raise UsageError(f"confirm must be 0 (off) or a number of rounds, got {merged.get('confirm')}")
    if merged.get("gpu_price") is not None and float(merged["gpu_price"]) < 0:
        raise UsageError(f"gpu_price must be US dollars per GPU-hour, >= 0; got {merged['gpu_price']}")
    if not merged.get("vllm_python"):
        merged["vllm_python"] = sys.executable
    python = str(merged["vllm_python"])  # absolute (launch.sh runs from anywhere), symlinks kept (venvs)
    merged["vllm_python"] = os.path.abspath(python) if os.sep in python else (shutil.which(python) or python)
    return TuneSettings(**merged)
