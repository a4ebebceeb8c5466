"""TuneSettings: the resolved settings of one ``tune`` run (built-in defaults < slotune.yaml < flags).

Every setting is described, and its values checked, in ``tuner.settings.fields`` (``FIELDS``,
``check_setting``); TuneSettings checks its own values there too.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from loadtest.redact import mask_tree
from tuner.errors import UsageError
from tuner.settings.fields import FIELDS, check_setting


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
    dtype: str | None = None  # vLLM --dtype for every launch (None: vLLM's auto)
    seed: int = 0
    level_seconds: float | None = None
    soak_seconds: float | None = None
    certify: str = "all"
    output_tokens: int | None = None
    startup_timeout: float = 900.0
    time_budget: float | None = None
    overlap_startup: bool = False
    same_server: bool = False  # no fresh server after a lost CPU level (MeasurePlan.fresh_server_after_lost)
    predict: bool = False
    predict_sample: int = 200
    try_first: str | None = None
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

    def __post_init__(self) -> None:  # settings read back from best.json (retune) pass the same checks
        for name in FIELDS:
            value = getattr(self, name)
            if value is not None:
                check_setting(name, value, "settings")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def public_dict(self) -> dict[str, Any]:
        """What is printed and written (best.json, report.html): credentials masked."""
        return dict(mask_tree(asdict(self)))


def resolve(file_values: dict[str, Any], flag_values: dict[str, Any], *, source: str = "") -> TuneSettings:
    """Built-in defaults < project file < command-line flags (flags that were given, i.e. not None)."""
    merged: dict[str, Any] = {}
    for name, f in FIELDS.items():
        if f.default is not None:
            merged[name] = f.default
    merged.update({k: v for k, v in file_values.items() if v is not None})
    known = {f.name for f in fields(TuneSettings)}
    given = {k: v for k, v in flag_values.items() if v is not None and k in known}
    merged.update({k: check_setting(k, v) if k in FIELDS else v for k, v in given.items()})
    missing = [k for k in ("model", "gpu", "slo") if not merged.get(k)]
    if missing:
        where = f" (not in {source} either)" if source else " (no slotune.yaml found; `tune init` writes one)"
        raise UsageError(f"missing {', '.join('--' + m.replace('_', '-') for m in missing)}{where}")
    if not merged.get("vllm_python"):
        merged["vllm_python"] = sys.executable
    python = str(merged["vllm_python"])  # absolute (launch.sh runs from anywhere), symlinks kept (venvs)
    merged["vllm_python"] = os.path.abspath(python) if os.sep in python else (shutil.which(python) or python)
    return TuneSettings(**merged)
