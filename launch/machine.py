"""The machine a capacity was measured on, and launch.sh's check of the machine it starts on.

A certified rate is a property of the machine that measured it: another GPU model, or a CPU host with fewer or
slower cores, serves the same configuration at another rate. The study records the device (``device_name``, read
by ``tuner.versions`` through the vLLM interpreter) and the CPU count; launch.sh states them and, at start, warns in
one line where the machine differs. A CPU's name does not tell its speed (two 2-core hosts named alike served one
draw 26-fold apart: docs/certification.md), so a matching name is not a verification: ``tune retune`` is.

``device_name`` and ``mismatch`` run inside launch.sh and the versions probe: standard library only (torch when the
interpreter has it).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, replace

from launch.pace import pace_tolerance


def device_name() -> str | None:
    """The first visible GPU's name as torch reports it, else "cpu: <model name>" from /proc/cpuinfo; None when
    neither can be read."""
    try:
        import torch

        if torch.cuda.is_available():
            return str(torch.cuda.get_device_name(0))
    except Exception:
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "cpu: " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def mismatch(measured: str, measured_cpus: str | int | None, here: str | None, here_cpus: int | None) -> str:
    """What differs between the machine measured and this one, in words; "" when nothing known differs. The CPU
    count is compared on CPU devices only (a GPU's host cores do not set its rate), and only where it was recorded."""
    if not measured:
        return ""
    if here != measured:
        return f"this machine is {here or 'unknown'}"
    cpu = str(measured).startswith("cpu: ")
    if cpu and measured_cpus and here_cpus and int(measured_cpus) != int(here_cpus):
        return f"this machine has {here_cpus} CPUs, not {measured_cpus}"
    return ""


@dataclass(frozen=True)
class MeasuredOn:
    """The machine a study measured: its device (``device_name``), CPU count, and the GPU profile whose memory it
    emulated (None: none)."""

    device: str
    cpus: int | None = None
    emulated: str | None = None
    pace_ms: float | None = None  # the frozen configuration's pace there (launch.pace), ms per output token
    spare: float | None = None  # the stated rate's spare speed, a factor (tuner.certify.spare_speed); None: not stated

    def with_pace(self, pace_ms: float | None) -> MeasuredOn:
        return replace(self, pace_ms=pace_ms)

    def with_spare(self, spare: float | None) -> MeasuredOn:
        return replace(self, spare=spare)

    @property
    def pace_tolerance(self) -> float:
        """How much slower a start's pace may be before it warns (launch.pace: the stated rate's spare speed, but not
        inside the device's own noise, which is larger on a CPU)."""
        return pace_tolerance(self.device, self.spare)

    def text(self) -> str:
        """'cpu: Intel(R) Xeon(R) Processor, 2 CPUs'; 'NVIDIA H200 (the a30's memory emulated: ...)'."""
        out = self.device + (f", {self.cpus} CPUs" if self.device.startswith("cpu: ") and self.cpus else "")
        if self.emulated:
            gpu = self.emulated
            out += f" (the {gpu}'s memory emulated: the rate is this device's speed, not the {gpu}'s)"
        if self.pace_ms is not None:
            out += f"; a fixed request alone at {self.pace_ms:.1f} ms a token (timed again at start)"
        return out

    @classmethod
    def from_versions(cls, versions: Mapping[str, object], emulated: str | None = None) -> MeasuredOn | None:
        """From the study's recorded versions (tuner.versions); None when the device was not recorded."""
        device, cpus = versions.get("gpu_name"), versions.get("cpu_count")
        if not isinstance(device, str) or not device:
            return None
        return cls(device, cpus if isinstance(cpus, int) else None, emulated)


# launch.sh runs this with VLLM_PYTHON: argv = measured device, measured CPU count ("" when unrecorded)
MACHINE_CHECK_PY = f"""from __future__ import annotations
import os, sys
{inspect.getsource(device_name)}
{inspect.getsource(mismatch)}
print(mismatch(sys.argv[1], sys.argv[2], device_name(), os.cpu_count()))"""
