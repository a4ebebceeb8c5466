"""A finished study folder's winner, read from its best.json into one frozen record.

The configuration deployed is ``best.config``, as launch.sh starts it. With memory emulation the server
measured was ``best.launched`` (gpu_memory_utilization rescaled to the emulating GPU, batch limits
pinned); ``emulation_differences`` lists what differs so an export can say it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from launch.config import ServeConfig
from launch.machine import MeasuredOn
from tuner.document.study import StudyDocument
from tuner.errors import UsageError
from tuner.export.cost import RateBasis, winner_basis

# Set per device by the tuner when trials run side by side; a container is given its GPUs by its runtime.
DEVICE_ENV = ("CUDA_VISIBLE_DEVICES",)


@dataclass(frozen=True)
class StudyWinner:
    study_dir: Path
    doc: StudyDocument  # best.json as read (cost.py reads its figures)
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
    model_fingerprint: str
    notes: tuple[str, ...]
    measured: MeasuredOn | None = None  # the machine measured (None: not recorded) and the winner's pace there

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


def read_study(study_dir: str | Path) -> StudyWinner:
    """The winner of ``study_dir``; UsageError when the study has none (no configuration met the SLO)."""
    study_dir = Path(study_dir)
    path = study_dir / "best.json"
    if not path.is_file():
        raise UsageError(f"--study {study_dir}: no best.json there; pass the output folder of a finished `tune` run")
    doc = StudyDocument.from_json(path)
    best, rate = doc.best, winner_basis(doc)
    if best is None or not doc.slo_met or rate is None:
        raise UsageError(
            f"{path}: no configuration met the SLO ({doc.slo}), so there is nothing to "
            "deploy; see report.html for the closest ones"
        )
    return StudyWinner(
        study_dir=study_dir,
        doc=doc,
        trial=best.trial,
        config=best.deployed or best.config,  # as launch.sh starts it: the KV cache pinned (tuner.trial.kv_pin)
        launched=best.launched,
        rate=rate,
        goodput_req_s=best.goodput_req_s,
        measured_at=doc.created,
        slo=doc.slo,
        workload=doc.workload,
        gpu_profile=doc.gpu.profile,
        emulated_on=doc.gpu.emulated_on,
        vllm_version=doc.vllm.version,
        vllm_python=doc.vllm.python,
        model_fingerprint=doc.model.fingerprint,
        notes=doc.notes,
        measured=measured_on(doc),
    )


def measured_on(doc: StudyDocument) -> MeasuredOn | None:
    """The machine the study measured (its recorded versions), the GPU whose memory it emulated, the winner's pace
    there and the spare speed stated with its rate (best.json's, as launch.sh states them:
    tuner.study_outputs.StudyOutputs.measured_on)."""
    emulated = doc.gpu.profile if doc.gpu.emulated_on else None
    measured = MeasuredOn.from_versions(doc.versions or {}, emulated)
    if measured is None:
        return None
    spare = doc.spare_speed.spare if doc.spare_speed is not None else None
    return measured.with_pace(doc.best.pace_ms if doc.best else None).with_spare(spare)
