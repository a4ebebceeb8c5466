"""The project file ``slotune.yaml``: read and validate it (naming file, line and key on error), and
write a commented one for ``tune init``. Keys and their meaning come from ``tuner.settings.fields.FIELDS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from loadtest.textfile import read_yaml
from tuner.errors import ProfileError
from tuner.settings.fields import FIELDS, check_setting

DEFAULT_NAME = "slotune.yaml"


def find_project_file(explicit: str | None, cwd: Path | None = None) -> Path | None:
    """``--config FILE`` (must exist), else ./slotune.yaml when present, else None."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ProfileError(f"--config {explicit}: no such file")
        return path
    path = (cwd or Path.cwd()) / DEFAULT_NAME
    return path if path.is_file() else None


def read_project_file(path: Path) -> dict[str, Any]:
    """Validated {key: value}; relative paths are resolved against the file's folder."""
    data, lines = read_yaml(path, ProfileError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ProfileError(f"{path}:1: the file must be a mapping of keys to values, e.g. 'gpu: a30'")
    out: dict[str, Any] = {}
    for key, value in data.items():
        line = lines.get(str(key), 1)
        if key not in FIELDS:
            raise ProfileError(f"{path}:{line}: unknown key {key!r}; valid keys: {', '.join(FIELDS)}")
        out[key] = None if value is None else check_setting(key, value, f"{path}:{line}")
    for key in ("model", "quantized_model", "draft_model", "out", "quantize_python"):
        if isinstance(out.get(key), str) and not Path(out[key]).is_absolute():
            out[key] = str((path.parent / out[key]).resolve()) if key != "out" else str(path.parent / out[key])
    wl = out.get("workload")
    if isinstance(wl, str) and wl.endswith((".yaml", ".yml", ".jsonl", ".json")) and not Path(wl).is_absolute():
        out["workload"] = str(path.parent / wl)
    return out


def render_project_file(values: dict[str, Any]) -> str:
    """A commented slotune.yaml: every key with its meaning; given values set, the rest commented out."""
    lines = [
        "# slotune project file: `tune` reads it from the working directory (or --config FILE).",
        "# Command-line flags override it; it overrides built-in defaults.",
        "",
    ]
    for key, f in FIELDS.items():
        lines.append(f"# {f.help} [{f.type.__name__}: {f.valid}]")
        value = values.get(key, f.default)
        if value is None:
            lines.append(f"# {key}:")
        else:
            lines.append(yaml.safe_dump({key: value}, default_flow_style=False).strip())
        lines.append("")
    return "\n".join(lines)
