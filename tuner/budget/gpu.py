"""GPUProfile: what the budget and the roofline need to know about one accelerator.

Built-in profiles live in ``profiles/gpus/<name>.yaml``; every number there carries its source in a
comment. ``GPUProfile.load`` takes a built-in name, a path to a YAML file, or ``"auto"`` (the local
GPU, read through torch or nvidia-smi). A missing number is a ``ProfileError`` naming the file and
the field — never a silent default. ``hourly_price_usd`` (per GPU, on-demand) is the one optional
field: prices differ by provider, so a profile without one states no cost unless ``--gpu-price`` gives it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadtest.textfile import read_yaml
from profiles import builtin_names, profile_path
from tuner.errors import ProfileError
from tuner.units import GIB

_REQUIRED = ("name", "memory_bytes", "bandwidth_bytes_s", "bf16_tflops", "compute_capability", "fp8_kv")


@dataclass(frozen=True)
class GPUProfile:
    """One device. ``memory_bytes`` is what the framework reports as total memory (torch's
    ``total_memory`` on CUDA; the host's MemTotal for ``cpu``)."""

    name: str
    memory_bytes: int
    bandwidth_bytes_s: float
    bf16_tflops: float  # dense (no sparsity)
    fp8_tflops: float | None  # dense; None when the chip has no fp8 tensor cores
    compute_capability: str  # "9.0"; "cpu" for the CPU profile
    fp8_kv: bool  # vLLM accepts --kv-cache-dtype fp8 on this device
    is_cpu: bool = False
    hourly_price_usd: float | None = field(default=None, compare=False)  # per GPU; None: not stated
    sources: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    path: str | None = field(default=None, compare=False)

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB

    @classmethod
    def load(cls, name_or_path: str) -> GPUProfile:
        """A built-in profile name (``h200``), a YAML path, or ``auto`` (the local GPU)."""
        if name_or_path == "auto":
            return detect_local()
        p = Path(name_or_path)
        if p.suffix in (".yaml", ".yml") or p.is_file():
            if not p.is_file():
                raise ProfileError(
                    f"GPU profile file {p} does not exist; pass a built-in name "
                    f"({', '.join(builtin_gpus())}) or an existing YAML file"
                )
            return cls.from_yaml(p)

        found = profile_path("gpus", name_or_path.lower())
        if found is None:
            raise ProfileError(
                f"unknown GPU profile {name_or_path!r}; built-in: "
                f"{', '.join(builtin_gpus())}, or 'auto', or a path to a YAML file with "
                "the fields " + ", ".join(_REQUIRED)
            )
        return cls.from_yaml(found)

    @classmethod
    def from_yaml(cls, path: str | Path) -> GPUProfile:
        path = Path(path)
        data, _ = read_yaml(path, ProfileError)
        if not isinstance(data, dict):
            raise ProfileError(f"{path}: expected a mapping of fields ({', '.join(_REQUIRED)})")
        return cls.from_dict(data, origin=str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], origin: str = "<dict>") -> GPUProfile:
        for key in _REQUIRED:
            if data.get(key) is None:
                raise ProfileError(
                    f"{origin}: field '{key}' is missing; add it with its source in a comment "
                    f"(required fields: {', '.join(_REQUIRED)})"
                )
        if "fp8_tflops" not in data:
            raise ProfileError(
                f"{origin}: field 'fp8_tflops' is missing; give the dense fp8 TFLOP/s, "
                "or null when the chip has no fp8 tensor cores"
            )
        is_cpu = str(data["compute_capability"]) == "cpu"
        memory = data["memory_bytes"]
        if memory == "host":
            if not is_cpu:
                raise ProfileError(f"{origin}: memory_bytes 'host' is only valid for the cpu profile")
            memory = _host_memory_bytes()
        fp8_kv = data["fp8_kv"]
        if fp8_kv == "host":
            if not is_cpu:
                raise ProfileError(f"{origin}: fp8_kv 'host' is only valid for the cpu profile")
            fp8_kv = host_fp8_kv()
        if not isinstance(fp8_kv, bool):
            raise ProfileError(f"{origin}: fp8_kv is {fp8_kv!r}; give true or false (or 'host' in the cpu profile)")
        for key in ("memory_bytes", "bandwidth_bytes_s", "bf16_tflops", "fp8_tflops"):
            value = memory if key == "memory_bytes" else data[key]
            if value is not None and not _positive_number(value):
                raise ProfileError(
                    f"{origin}: field '{key}' is {value!r}; it must be a positive number (with its source in a comment)"
                )
        try:
            return cls(
                name=str(data["name"]),
                memory_bytes=int(memory),
                bandwidth_bytes_s=float(data["bandwidth_bytes_s"]),
                bf16_tflops=float(data["bf16_tflops"]),
                fp8_tflops=None if data["fp8_tflops"] is None else float(data["fp8_tflops"]),
                compute_capability=str(data["compute_capability"]),
                fp8_kv=fp8_kv,
                is_cpu=is_cpu,
                hourly_price_usd=_price(data.get("hourly_price_usd"), origin),
                sources=tuple(sorted((str(k), str(v)) for k, v in (data.get("sources") or {}).items())),
                path=origin,
            )
        except (TypeError, ValueError) as exc:
            raise ProfileError(f"{origin}: a field has the wrong type ({exc}); numbers must be numbers") from exc


def _positive_number(value: object) -> bool:
    """A number, or its text (YAML 1.1 reads 4.8e12 as text), greater than 0 and finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return False
    try:
        return 0 < float(value) < 1e30
    except ValueError:
        return False


def _price(value: object, origin: str) -> float | None:
    """The optional hourly price: a number >= 0 (US dollars per GPU-hour) or absent/null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ProfileError(
            f"{origin}: hourly_price_usd must be a number of US dollars per GPU-hour >= 0 (got {value!r}); "
            "give it with its source in a comment, or leave it out"
        )
    return float(value)


def builtin_gpus() -> list[str]:
    return builtin_names("gpus")


def _host_memory_bytes() -> int:
    """MemTotal of this host (what vLLM-CPU's memory-node info reports on a one-node machine)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise ProfileError("/proc/meminfo has no MemTotal; give memory_bytes as a number in the cpu profile")


def host_fp8_kv(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether vLLM-CPU serves an fp8 KV cache on this host: its CPU attention needs AVX-512 or AMX tiles."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return "amx_tile" in flags or {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags)


def _match_builtin(device_name: str) -> GPUProfile | None:
    """The built-in profile whose name matches the device name nvidia-smi/torch report."""
    lowered = device_name.lower()
    aliases = {
        "h200": ("h200",),
        "h100-sxm": ("h100 80gb hbm3", "h100-sxm", "h100 sxm"),
        "h100-pcie": ("h100 pcie",),
        "a100-80gb": ("a100-sxm4-80gb", "a100 80gb", "a100-pcie-80gb"),
        "a100-40gb": ("a100-sxm4-40gb", "a100-pcie-40gb", "a100 40gb"),
        "l40s": ("l40s",),
        "l4": ("nvidia l4",),
        "a30": ("a30",),
        "a10": ("nvidia a10",),
        "rtx4090": ("4090",),
    }
    for name, keys in aliases.items():
        if any(k in lowered for k in keys) and not (name == "a10" and "a100" in lowered):
            return GPUProfile.load(name)
    return None


def detect_local() -> GPUProfile:
    """Read the local GPU: exact total memory from torch (or nvidia-smi); speeds from the matching
    built-in profile. No GPU → ProfileError saying what to pass instead."""
    name, total = _query_torch() or _query_nvidia_smi() or (None, None)
    if name is None or total is None:
        raise ProfileError(
            "--gpu auto: no CUDA GPU found (torch sees none and nvidia-smi is missing or "
            f"failed); pass a profile name ({', '.join(builtin_gpus())}) or a YAML path"
        )
    known = _match_builtin(name)
    if known is None:
        raise ProfileError(
            f"--gpu auto: local GPU {name!r} ({total / GIB:.1f} GiB) has no built-in "
            "profile, so its bandwidth and TFLOP/s are unknown; copy profiles/gpus/h200.yaml, "
            "fill in its numbers with sources, and pass that file"
        )
    from dataclasses import replace

    return replace(known, memory_bytes=total, sources=known.sources + (("memory_bytes", f"local {name}"),))


def _query_torch() -> tuple[str, int] | None:
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return props.name, int(props.total_memory)


def _query_nvidia_smi() -> tuple[str, int] | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.strip().splitlines()[0] if out.strip() else ""
    if "," not in first:
        return None
    name, mib = first.rsplit(",", 1)
    # nvidia-smi's total includes memory the driver reserves; on the H200 torch reports 615 MiB less
    # (measured here: 143771 MiB vs 150,109,880,320 B). Without torch we use nvidia-smi's figure.
    return name.strip(), int(float(mib)) * (1 << 20)
