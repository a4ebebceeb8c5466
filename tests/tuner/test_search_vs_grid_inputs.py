"""bench/search_vs_grid.py: --grid values; --search-from compares a grid only with a study measured the same way."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from search_vs_grid import build_parser, parse_grid, same_measurement, tune_settings  # noqa: E402

from tuner.errors import UsageError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _grid_script_args(target: str, search: str) -> list[str]:
    """The arguments scripts/gpu/h200-grid-args.sh gives every grid call (its own file, sourced by bash;
    the model path of h200-env.sh stands in, nothing is started)."""
    code = (
        "model=/tmp/models/llama-3-8b; w4a16_model() { :; }; target=$1; SEARCH=$2; "
        'source scripts/gpu/h200-grid-args.sh; printf "%s\\0" "${grid_args[@]}"'
    )
    out = subprocess.run(
        ["bash", "-c", code, "bash", target, search], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return out.split("\0")[:-1]


@pytest.mark.parametrize(("target", "search"), [("a30", "a30"), ("h200", "h200"), ("a30", "a30-w4a16")])
def test_the_gpu_grid_script_measures_like_the_committed_study_it_is_compared_with(target, search, tmp_path):
    args = build_parser().parse_args([*_grid_script_args(target, search), "--out", str(tmp_path)])
    assert args.search_from == Path(f"results/h200-llama-3-8b-{search}")
    same_measurement(ROOT / args.search_from, tune_settings(args).to_dict())  # raises when they differ


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
