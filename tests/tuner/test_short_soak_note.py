"""``--soak-seconds`` under the profile's default soak: the run says, once on the console and in best.json, that its
certificates cover shorter windows than the default stands for (a queue that builds later goes unseen)."""

from __future__ import annotations

import json

import pytest

from tuner.budget.gpu import GPUProfile
from tuner.inputs import short_soak_note
from tuner.settings.tune_settings import TuneSettings


def settings(soak: float | None, gpu: str = "cpu") -> TuneSettings:
    return TuneSettings(model="/m", gpu=gpu, slo="ttft_p95=2s", soak_seconds=soak)


@pytest.mark.parametrize(("gpu", "soak"), [("cpu", 60.0), ("cpu", 119.5), ("h200", 90.0), ("a30", 120.0)])
def test_a_soak_under_the_profiles_default_is_named_with_that_default(gpu: str, soak: float) -> None:
    profile = GPUProfile.load(gpu)
    (note,) = short_soak_note(settings(soak, gpu), profile)
    default = "120" if gpu == "cpu" else "180"
    assert note.startswith(f"--soak-seconds {soak:g} is under the {profile.name} profile's {default}:")
    assert f"held {soak:g}-s windows" in note and f"for {default}-s soaks" in note


@pytest.mark.parametrize(
    ("gpu", "soak"), [("cpu", None), ("cpu", 0.0), ("cpu", 120.0), ("cpu", 300.0), ("h200", 180.0)]
)
def test_the_default_a_longer_soak_or_none_at_all_leave_no_note(gpu: str, soak: float | None) -> None:
    assert short_soak_note(settings(soak, gpu), GPUProfile.load(gpu)) == []


def test_the_note_reaches_the_console_once_and_best_json(offline_inputs, tmp_path, capsys) -> None:
    from tuner import pipeline
    from tuner.trial.result import TrialResult

    inp = offline_inputs(trials=2, soak_seconds=60.0, certify="baseline")
    (note,) = [n for n in inp.notes if n.startswith("--soak-seconds")]

    def fake_run_trial(n, config, baseline, ctx, say, device=None):
        return TrialResult(n, "COMPLETE", baseline, config, slo_met=True, goodput_req_s=1.0 + n, best_rate=1.0 + n)

    # the search and its outputs, as tune runs them; the certifying soaks would launch vLLM, so they stay out
    r = pipeline.open_run(inp, None, None, None, {"vllm": "0.32.0"}, None, fake_run_trial)
    pipeline.search(r)
    r.outputs.write(r.study)
    assert sum(line.endswith(f"note: {note}") for line in capsys.readouterr().err.splitlines()) == 1
    assert note in json.loads((tmp_path / "study" / "best.json").read_text())["notes"]
