"""Offline, on the dev machine (no GPU): what this study's calibrations predict for its own launches and for two
configurations measured on 2026-12-02 03:40-04:01 by ../h200-llama-3-8b-a30-predict (another H200 host, the same
protocol): its trial 1 (57.999 req/s) and the A30 grid's best point (64.27 req/s, its grid-best/).

    cd results/h200-llama-3-8b-a30-predict-2026-12-02-b && ../../.venv/bin/python offline_check.py > offline-check.txt

The first calibration (trial 0 alone, as `tune --predict` fitted it before its first launch) is fitted again here,
so trial 1's prediction (72.127) is reproduced as a check; the last refit (trials 0-2) is the one stored in study.db.
Inputs are rebuilt as scripts/gpu/rewrite-outputs.py does (vLLM 0.26.0's recorded --help, the config-only model).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from launch.config import ServeConfig  # noqa: E402
from launch.vllm_info import VllmInfo  # noqa: E402
from perfmodel.rank import Calibration  # noqa: E402
from tuner.inputs import load_inputs  # noqa: E402
from tuner.search.predict_model import perf_model  # noqa: E402
from tuner.search.predict_search import CALIBRATION_ATTR  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.settings.tune_settings import TuneSettings  # noqa: E402
from tuner.tune_setup import base_config, trial_context  # noqa: E402


def main() -> None:
    doc = json.loads((HERE / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    if not Path(settings.model, "config.json").is_file():
        cmd = [sys.executable, "-m", "tuner.cli", "make-model", "--out", settings.model, "--shape", "llama-3-8b"]
        subprocess.run([*cmd, "--no-weights"], check=True, cwd=ROOT, capture_output=True)
    settings = replace(settings, out="/tmp/offline-check-b", resume=False, emulate_on=doc["gpu"]["emulated_on"])
    version = doc["vllm"]["version"]
    help_text = (ROOT / "tests" / "launch" / "data" / f"help-options-{version}.txt").read_text()
    info = VllmInfo.from_help_text(help_text, python=doc["vllm"]["python"], version=version, platform="cuda")
    inp = load_inputs(settings, vllm=info)
    model = perf_model(trial_context(inp, Path("/tmp/offline-check-b/logs")))
    study = open_study(f"sqlite:///{HERE / 'study.db'}", resume=True, seed=0)
    results = {r.number: r for r in results_of(study)}
    first_run = json.loads((HERE.parent / "h200-llama-3-8b-a30-predict" / "best.json").read_text())
    points = [
        ("trial 0 (defaults; calibrated on)", results[0].config, results[0].best_rate),
        ("trial 1", results[1].config, results[1].best_rate),
        ("trial 2", results[2].config, results[2].best_rate),
        ("first run's trial 1 (other host)", ServeConfig.from_dict(first_run["best"]["config"]), 57.999),
        (
            "grid best, 512 seqs fp8 (other host)",
            replace(base_config(inp), max_num_seqs=512, kv_cache_dtype="fp8"),
            64.27,
        ),
    ]
    t0 = time.monotonic()
    first = model.calibrate([results[0]], None)
    print(f"first calibration (trial 0 alone) in {time.monotonic() - t0:.0f} s: {first.costs}")
    refit = Calibration.from_dict(study.user_attrs[CALIBRATION_ATTR])
    print(f"refit stored in study.db (trials {sorted(set(refit.trials))}): {refit.costs}")
    for name, cal in (("first", first), ("refit", refit)):
        for label, config, got in points:
            (p,) = model.rank([config], cal)
            err = f"{100 * (p.capacity_req_s / got - 1):+.1f} %" if p.capacity_req_s and got else "-"
            print(
                f"{name:5} calibration: {label:38} predicted {p.capacity_req_s:7.3f} req/s, measured {got:7.3f}"
                f" ({err}){'; ' + p.extrapolated if p.extrapolated else ''}"
            )


if __name__ == "__main__":
    main()
