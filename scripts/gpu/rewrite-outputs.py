"""Re-write a study's output files (best.json, trials.csv, report.html, launch.sh) from its study.db on a
machine without its vLLM: after a code change in how outputs are stated, for studies measured on the H200.

    python scripts/gpu/rewrite-outputs.py results/h200-llama-3-8b-a30 [more study folders]

Nothing is measured: the study must have every trial it asked for and its certifications (same soak
length). The launched vLLM's flags come from its recorded ``--help=all`` (tests/launch/data), the versions
and the model's fingerprint from best.json; the Llama-3-8B-shaped model is rebuilt config-only as on the
H200 (scripts/gpu/h200-env.sh) for its shape (its files differ from the H200's by the tokenizer's
serialization, so its own hash is not used).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from launch.vllm_flags import VllmInfo  # noqa: E402
from tuner.certify.certified import stored  # noqa: E402
from tuner.inputs import load_inputs  # noqa: E402
from tuner.pipeline import tune  # noqa: E402
from tuner.search.study import finished, open_study  # noqa: E402
from tuner.settings.tune_settings import TuneSettings  # noqa: E402


def model_dirs(settings: TuneSettings) -> None:
    """The GPU studies' Llama-3-8B-shaped model directories, config-only, where absent. A CPU study's model (a tiny
    random one, or SmolLM2) has another shape: its directory must be there, as its study made it."""
    for path, extra in ((settings.model, []), (settings.quantized_model, ["--w4a16"])):
        if path and settings.gpu == "cpu" and not Path(path, "config.json").is_file():
            raise SystemExit(f"{path}: the study's model directory is absent; make it as the study did (its README)")
        if path and not Path(path, "config.json").is_file():
            cmd = [sys.executable, "-m", "tuner.cli", "make-model", "--out", path, "--shape", "llama-3-8b"]
            subprocess.run([*cmd, "--no-weights", *extra], check=True, cwd=ROOT, capture_output=True)


def rewrite(study: Path) -> None:
    doc = json.loads((study / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    model_dirs(settings)
    db = open_study(f"sqlite:///{(study / 'study.db').resolve()}", resume=True, seed=settings.seed)
    soaks = {c.soak_s for c in stored(db).values()}
    settings = replace(
        settings,
        out=str(study),
        resume=True,
        trials=len(finished(db)),
        emulate_on=doc["gpu"]["emulated_on"] or settings.emulate_on,
        soak_seconds=soaks.pop() if len(soaks) == 1 else 0.0,
    )
    version = doc["vllm"]["version"]
    help_text = (ROOT / "tests" / "launch" / "data" / f"help-options-{version}.txt").read_text()
    info = VllmInfo.from_help_text(help_text, python=doc["vllm"]["python"], version=version, platform="cuda")
    outcome = tune(load_inputs(settings, vllm=info), versions=doc["versions"], fingerprint=doc["model"]["fingerprint"])
    # best.json keeps the settings the study was measured with ('auto' resolved on the H200, not here; the
    # trials it asked for, not the count that finished)
    written = json.loads((study / "best.json").read_text())
    for key in ("emulate_on", "trials"):
        written["settings"][key] = doc["settings"][key]
    (study / "best.json").write_text(json.dumps(written, indent=2, default=str))
    print(f"{study}: {outcome.headline.line() if outcome.headline else 'no headline'}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        rewrite(Path(arg))
