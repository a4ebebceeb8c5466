"""A finished study folder's winner, read from its best.json into one frozen record.

The configuration deployed is ``best.config``, as launch.sh starts it. With memory emulation the server
measured was ``best.launched`` (gpu_memory_utilization rescaled to the emulating GPU, batch limits
pinned); ``emulation_differences`` lists what differs so an export can say it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launch.config import ServeConfig
from tuner.errors import UsageError
from tuner.export.cost import RateBasis, winner_basis

# Set per device by the tuner when trials run side by side; a container is given its GPUs by its runtime.
DEVICE_ENV = ("CUDA_VISIBLE_DEVICES",)


@dataclass(frozen=True)
class StudyWinner:
    study_dir: Path
    doc: dict[str, Any]  # best.json as read (cost.py reads its figures)
    trial: int
    config: ServeConfig
    launched: ServeConfig | None
    rate: RateBasis
    goodput_req_s: float
    measured_at: str
    slo: str
    workload: str
    gpu_profile: str
    emulated_on: str | None
    vllm_version: str
    vllm_python: str | None
    model_fingerprint: str | None
    notes: tuple[str, ...]

    @property
    def is_cpu(self) -> bool:
        return self.gpu_profile == "cpu"

    def emulation_differences(self) -> list[str]:
        """'field: deployed value (measured with X)' for each knob the launched server had otherwise."""
        if self.launched is None:
            return []
        deployed, ran = self.config.to_dict(), self.launched.to_dict()
        out = []
        for key, value in deployed.items():
            if key == "env":
                ran_env = {k: v for k, v in ran["env"].items() if k not in DEVICE_ENV}
                if ran_env != value:
                    out.append(f"env: {value} (measured with {ran_env})")
            elif ran[key] != value:
                out.append(f"{key}: {value} (measured with {ran[key]})")
        return out


def _load(study_dir: Path) -> dict[str, Any]:
    path = study_dir / "best.json"
    if not path.is_file():
        raise UsageError(f"--study {study_dir}: no best.json there; pass the output folder of a finished `tune` run")
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); pass the folder of a finished `tune` run") from exc
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: expected a JSON object; pass the folder of a finished `tune` run")
    return doc


def read_study(study_dir: str | Path) -> StudyWinner:
    """The winner of ``study_dir``; UsageError when the study has none (no configuration met the SLO)."""
    study_dir = Path(study_dir)
    doc = _load(study_dir)
    best = doc.get("best")
    rate = winner_basis(doc)
    if not best or not doc.get("slo_met") or rate is None:
        raise UsageError(
            f"{study_dir / 'best.json'}: no configuration met the SLO ({doc.get('slo')}), so there is nothing to "
            "deploy; see report.html for the closest ones"
        )
    try:
        config = ServeConfig.from_dict(best["config"])
        launched = ServeConfig.from_dict(best["launched"]) if best.get("launched") else None
        gpu, vllm = doc.get("gpu") or {}, doc.get("vllm") or {}
        return StudyWinner(
            study_dir=study_dir,
            doc=doc,
            trial=int(best["trial"]),
            config=config,
            launched=launched,
            rate=rate,
            goodput_req_s=float(best["goodput_req_s"]),
            measured_at=str(doc["created"]),
            slo=str(doc["slo"]),
            workload=str(doc["workload"]),
            gpu_profile=str(gpu["profile"]),
            emulated_on=gpu.get("emulated_on"),
            vllm_version=str(vllm["version"]),
            vllm_python=vllm.get("python"),
            model_fingerprint=(doc.get("model") or {}).get("fingerprint"),
            notes=tuple(str(n) for n in doc.get("notes") or ()),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(
            f"{study_dir / 'best.json'}: missing or malformed field ({exc!r}); it was not written by this "
            "slotune — re-run `tune --resume` on the study to rewrite it"
        ) from exc
