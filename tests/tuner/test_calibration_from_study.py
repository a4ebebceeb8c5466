"""scripts/gpu/calibration-from-study.py on a committed H200 study: memory lines paired with trials."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("cal_from_study", ROOT / "scripts/gpu/calibration-from-study.py")
cal = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cal)


def test_engine_blocks_start_anew_in_each_device_calls_section():
    text = (
        "### call 1\n(EngineCore pid=7) INFO a\n(APIServer pid=6) INFO x\n(EngineCore pid=7) INFO b\n"
        "### call 2\n(EngineCore pid=7) INFO c\n"
    )
    assert cal.engine_blocks(text) == [
        "(EngineCore pid=7) INFO a\n(EngineCore pid=7) INFO b",
        "(EngineCore pid=7) INFO c",
    ]


def test_points_of_the_native_h200_study_carry_the_launched_settings(tmp_path, capsys):
    calibration = tmp_path / "cal.yaml"
    calibration.write_text("# header\ndevice: h200\nvllm_version: 0.26.0\npoints:\n")
    study = ROOT / "results/h200-llama-3-8b-h200"
    cal.main(
        [
            str(study),
            "--shape",
            "llama-3-8b",
            "--trials",
            ",".join(map(str, range(10))),
            "--calibration",
            str(calibration),
        ]
    )
    import yaml

    points = yaml.safe_load(calibration.read_text())["points"]
    assert calibration.read_text().startswith("# header")
    assert points[0]["settings"] == {"gpu_memory_utilization": 0.92}  # the defaults, as vLLM states them
    assert points[0]["reported"]["kv_tokens"] == 922064
    assert points[1]["settings"]["speculative_method"] == "ngram" and points[1]["reported"]["cudagraph_estimate_gib"]
    assert points[9]["reported"]["kv_tokens"] == 950160
    with pytest.raises(SystemExit, match="10 engine blocks .* but 5 trials"):
        cal.main([str(study), "--shape", "llama-3-8b", "--trials", "0,1,2,3,4", "--dry-run"])
