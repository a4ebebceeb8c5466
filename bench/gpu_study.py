"""A GPU study's inputs rebuilt on the dev machine (no GPU, no vLLM probe), for the benches and the offline checks
under results/ that refit or replay perfmodel on a committed study: its settings from best.json, vLLM's flags from
the recorded ``--help`` of its version, and the config-only Llama-3-8B shape it served with random weights."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from launch.vllm_flags import VllmInfo  # noqa: E402
from tuner.inputs import Inputs, load_inputs  # noqa: E402
from tuner.settings.tune_settings import TuneSettings  # noqa: E402


def study_inputs(study: Path, scratch: str) -> Inputs:
    """``study``'s inputs as `tune` loaded them, its outputs pointed at ``scratch`` (never written there)."""
    doc = json.loads((study / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    if not Path(settings.model, "config.json").is_file():
        cmd = [sys.executable, "-m", "tuner.cli", "make-model", "--out", settings.model, "--shape", "llama-3-8b"]
        subprocess.run([*cmd, "--no-weights"], check=True, cwd=ROOT, capture_output=True)
    settings = replace(settings, out=scratch, resume=False, emulate_on=doc["gpu"]["emulated_on"])
    version = doc["vllm"]["version"]
    help_text = (ROOT / "tests" / "launch" / "data" / f"help-options-{version}.txt").read_text()
    info = VllmInfo.from_help_text(help_text, python=doc["vllm"]["python"], version=version, platform="cuda")
    return load_inputs(settings, vllm=info)
