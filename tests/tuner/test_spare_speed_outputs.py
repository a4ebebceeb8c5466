"""tune --predict states the winner's spare speed in every file: run h's committed study (an H100, the A30's memory
emulated) re-written from its study.db through tune's own steps (scripts/gpu/rewrite-outputs.py: nothing measured),
first without the stored spare speed, so that tune computes it again."""

from __future__ import annotations

import html
import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from launch.pace import pace_tolerance
from perfmodel.family import family_of
from tuner.certify.spare_speed import STUDY_ATTR
from tuner.search.study import open_study

ROOT = Path(__file__).resolve().parents[2]
RUN_H = ROOT / "results" / "gpu-run-h-edge-rule-2026-12-06"


def rewrite_outputs() -> Any:
    spec = importlib.util.spec_from_file_location("rewrite_outputs", ROOT / "scripts" / "gpu" / "rewrite-outputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rewrite(study: Path) -> None:
    rewrite_outputs().rewrite(study)


def copy_without_spare(tmp_path: Path, predict: bool) -> Path:
    study = tmp_path / "run-h"
    shutil.copytree(RUN_H, study)
    open_study(f"sqlite:///{study / 'study.db'}", resume=True, seed=0).set_user_attr(STUDY_ATTR, None)
    doc = json.loads((study / "best.json").read_text())
    doc["settings"]["predict"] = predict
    doc.pop("spare_speed", None)
    (study / "best.json").write_text(json.dumps(doc))
    return study


@pytest.mark.xdist_group("run-h-model")  # both build the config-only model run h's settings name
def test_tune_predict_states_the_spare_speed_in_best_json_launch_sh_and_the_report(tmp_path):
    study = copy_without_spare(tmp_path, predict=True)
    rewrite(study)
    spare = json.loads((study / "best.json").read_text())["spare_speed"]
    assert spare["trial"] == 1 and round(spare["rate_req_s"], 3) == 59.595 and spare["window_s"] == 90.0
    assert spare["spare"] is not None and 1.0 <= spare["spare"] < 1.3  # run h's edge tips on a slower machine
    assert spare["slowed"][0]["factor"] == 1.0 and spare["slowed"][-1]["held"] < spare["slowed"][-1]["draws"]
    # set to its soak's speed: the held soak's mean TPOT (10.6 ms) within a few per cent of the calibration's steps
    assert spare["measured_tpot_ms"] == pytest.approx(10.56, abs=0.01) and 0.95 < spare["anchor"] < 1.1
    assert "and set to the speed of its soaks: steps x" in spare["line"]
    assert f"# {spare['line']}\n" in (study / "launch.sh").read_text()
    # launch.sh's pace check warns past that spare speed (never inside the card's own 1.08x spread)
    tolerance = pace_tolerance("NVIDIA H100 80GB HBM3", spare["spare"])
    assert tolerance < 1.25 and f"\nPACE_TOLERANCE={tolerance:g}\n" in (study / "launch.sh").read_text()
    assert spare["line"] in html.unescape((study / "report.html").read_text())


@pytest.mark.xdist_group("run-h-model")
def test_without_a_stored_calibration_the_model_is_fitted_on_the_best_familys_launches(tmp_path):
    """A study tune --predict did not calibrate: the spare speed is calibrated on vLLM's defaults and the best (run h's
    fp8 trial 2 is of another family, so not); the fit is injected here (the real one, ~1 min on 2 cores, runs in
    bench/spare_speed_replay.py and the long e2e test), returning the calibration run h's study stored."""
    import sys

    from tuner.certify.certified import stored
    from tuner.search.families import FAMILIES_ATTR
    from tuner.search.predict_fit import CALIBRATION_ATTR
    from tuner.search.predict_spare import family_calibration, keep_fit, kept_fit, spare_speed_of

    sys.path.insert(0, str(ROOT / "scripts" / "gpu"))
    from offline_model import scratch_study_context

    _inp, ctx, _model, results = scratch_study_context(RUN_H, tmp_path / "scratch")
    study = open_study(f"sqlite:///{tmp_path / 'scratch' / 'study.db'}", resume=True, seed=0, must_exist=True)
    best, cert = results[1], stored(study)[1]
    kept = family_calibration(study, family_of(best.config))
    study.set_user_attr(CALIBRATION_ATTR, None)
    study.set_user_attr(FAMILIES_ATTR, None)
    fitted_on: list[list[int]] = []

    def fit(trials):
        fitted_on.append([t.number for t in trials])
        return kept

    assert "was not calibrated" in str(spare_speed_of(study, ctx, best, cert, best.levels))  # no fit: none stated
    found = spare_speed_of(study, ctx, best, cert, best.levels, fit)
    assert fitted_on == [[0, 1]]
    assert not isinstance(found, str) and found.calibrated_on == (0, 1) and found.spare == pytest.approx(1.05)
    # a resumed call reuses the fit kept for these very trials, and no other's
    assert kept_fit(study, [results[0], best]) is None
    keep_fit(study, [results[0], best], kept)
    assert kept_fit(study, [results[0], best]) == kept and kept_fit(study, [best]) is None


def test_a_cpu_studys_absent_model_is_named_not_made_in_another_shape(tmp_path):
    """The offline tools rebuild a GPU study's Llama-3-8B-shaped model where it is absent; a CPU study's model has
    another shape (a tiny Llama, SmolLM2), so its absent directory is named instead (a replay once ran a tiny-Llama
    study on an 8B shape made in its place)."""
    from tuner.settings.tune_settings import TuneSettings

    absent = tmp_path / "tiny-llama"
    with pytest.raises(SystemExit, match="tiny-llama: the study's model directory is absent"):
        rewrite_outputs().model_dirs(TuneSettings(model=str(absent), gpu="cpu", slo="ttft_p95=2s"))
    assert not absent.exists()
