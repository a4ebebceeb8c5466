"""bench/search_vs_grid.py: --grid values; --search-from compares a grid only with a study measured the same way."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from search_vs_grid import parse_grid, same_measurement  # noqa: E402

from tuner.errors import UsageError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_a30_study_matches_the_gpu_grid_script_settings():
    ours = {
        "gpu": "a30",
        "slo": "ttft_p95=2s,tpot_p95=60ms",
        "workload": "chat",
        "level_seconds": 8.0,
        "emulate_on": "auto",
        "load_format": "dummy",
        "output_tokens": None,
        "seed": 0,
    }
    same_measurement(ROOT / "results/h200-llama-3-8b-a30", ours)  # what scripts/gpu/h200-grid.sh a30 passes


def test_a_study_measured_with_other_levels_is_refused(tmp_path):
    (tmp_path / "best.json").write_text(json.dumps({"settings": {"gpu": "a30", "level_seconds": 20.0}}))
    with pytest.raises(UsageError, match="level_seconds: study 20.0, grid 8.0"):
        same_measurement(tmp_path, {"gpu": "a30", "level_seconds": 8.0})
    with pytest.raises(UsageError, match="cannot read"):
        same_measurement(tmp_path / "missing", {})


def test_grid_values_are_booleans_numbers_or_words():
    # words failed to parse once (json.loads("auto")), so the GPU grid script stopped before its first point
    grid = parse_grid(
        [
            "max_num_seqs=128,256",
            "kv_cache_dtype=auto,fp8",
            "enable_chunked_prefill=true,false",
            "gpu_memory_utilization=0.85",
        ]
    )
    assert grid == {
        "max_num_seqs": [128, 256],
        "kv_cache_dtype": ["auto", "fp8"],
        "enable_chunked_prefill": [True, False],
        "gpu_memory_utilization": [0.85],
    }
