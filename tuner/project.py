"""The project file ``slotune.yaml``: read and validate it (naming file, line and key on error), and
write a commented one for ``tune init``. Keys and their meaning come from ``tuner.settings.FIELDS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from loadtest.slo import SLOError, parse_slos
from tuner.errors import ProfileError
from tuner.settings import FIELDS

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


def _check(path: Path, line: int, key: str, value: Any) -> Any:
    f = FIELDS[key]
    where = f"{path}:{line}: key '{key}'"
    if value is None:
        return None
    if f.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, f.type) or (isinstance(value, bool) and f.type is not bool):
        raise ProfileError(f"{where} must be {f.type.__name__} ({f.help}), got {value!r}")
    if key == "slo":
        try:
            parse_slos(str(value))
        except SLOError as exc:
            raise ProfileError(f"{where}: {exc}") from None
    numeric = ("trials", "level_seconds", "startup_timeout", "output_tokens", "time_budget")
    if key in numeric and isinstance(value, (int, float)) and value <= 0:
        raise ProfileError(f"{where} must be positive, got {value!r}")
    return value


def read_project_file(path: Path) -> dict[str, Any]:
    """Validated {key: value}; relative paths are resolved against the file's folder."""
    text = path.read_text()
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {exc}") from None
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise ProfileError(f"{path}:1: the file must be a mapping of keys to values")
    data = yaml.safe_load(text)
    out: dict[str, Any] = {}
    for key_node, _ in root.value:
        key, line = key_node.value, key_node.start_mark.line + 1
        if key not in FIELDS:
            raise ProfileError(f"{path}:{line}: unknown key '{key}'; valid keys: {', '.join(FIELDS)}")
        out[key] = _check(path, line, key, data[key])
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
        lines.append(f"# {f.help} [{f.type.__name__}]")
        value = values.get(key, f.default)
        if value is None:
            lines.append(f"# {key}:")
        else:
            lines.append(yaml.safe_dump({key: value}, default_flow_style=False).strip())
        lines.append("")
    return "\n".join(lines)
