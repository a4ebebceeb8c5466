"""Data files: GPU profiles (``gpus/*.yaml``) and workloads (``workloads/*.yaml``).

A package only so the YAML ships inside the wheel; ``profile_path`` finds a built-in by name.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent


def builtin_names(kind: str) -> list[str]:
    """Names of the built-in profiles of one kind ("gpus" or "workloads")."""
    return sorted(p.stem for p in (ROOT / kind).glob("*.yaml"))


def profile_path(kind: str, name: str) -> Path | None:
    """Path of built-in profile ``name`` of ``kind``, or None when there is none."""
    p = ROOT / kind / f"{name}.yaml"
    return p if p.is_file() else None
