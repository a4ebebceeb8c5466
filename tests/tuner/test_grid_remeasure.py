"""bench/grid_remeasure.py: re-measurements kept as they land, gone on from after a cut, and a budget that starts
no measurement it cannot finish; the summary reads capacities, not (capacity, device) pairs."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import grid_remeasure  # noqa: E402

from launch.config import ServeConfig  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402

CONTENDERS = {
    'grid best {"max_num_seqs": 512}': ServeConfig(model="/m", max_num_seqs=512),
    "vLLM defaults": ServeConfig(model="/m"),
    "search best (trial 2)": ServeConfig(model="/m", max_num_seqs=256),
}
RATES = {512: 60.0, None: 50.0, 256: 63.0}


class FakeRuns:
    """One fresh trial per call, its capacity set by the configuration; counts the trials started."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.started: list[int] = []
        self.stop_after = stop_after

    def __call__(self, k: int, config: ServeConfig, say: object) -> TrialResult:
        if self.stop_after is not None and len(self.started) == self.stop_after:
            raise KeyboardInterrupt  # the device call's limit
        self.started.append(k)
        rate = RATES[config.max_num_seqs]
        return TrialResult(k, "COMPLETE", False, config, slo_met=True, best_rate=rate, goodput_req_s=rate * 0.9)


def test_a_cut_run_goes_on_from_the_kept_measurements(tmp_path: Path) -> None:
    path = tmp_path / "remeasure.jsonl"
    first = FakeRuns(stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        grid_remeasure.remeasure(CONTENDERS, 1, first, path)
    assert first.started == [2000, 2001] and len(path.read_text().splitlines()) == 2
    second = FakeRuns()
    got = grid_remeasure.remeasure(CONTENDERS, 1, second, path)
    assert second.started == [2002]  # only the third contender is measured again
    assert got == {name: (RATES[cfg.max_num_seqs],) for name, cfg in CONTENDERS.items()}


def test_the_budget_starts_no_measurement_a_typical_one_would_overrun(tmp_path: Path) -> None:
    path = tmp_path / "remeasure.jsonl"
    left = iter([500.0, 90.0])  # the fake trial takes no time: the median is then (200 + 0) / 2
    runs = FakeRuns()
    with pytest.raises(grid_remeasure.BudgetSpent, match="a typical one takes 100 s"):
        grid_remeasure.remeasure(CONTENDERS, 1, runs, path, budget_left=lambda: next(left), typical_s=[200.0])
    assert runs.started == [2000]
    assert len(grid_remeasure.stored(path)) == 1


def test_the_summary_compares_means_over_the_re_measurements() -> None:
    got = {
        'grid best {"max_num_seqs": 512}': (60.0, 64.0),
        "vLLM defaults": (50.0, 50.0),
        "search best (trial 2)": (61.0, 63.0),
    }
    lines = grid_remeasure.summary_lines(got)
    assert lines[0] == 're-measured grid best {"max_num_seqs": 512}: mean 62.000 req/s over 2 (min 60.000, max 64.000)'
    assert lines[-1].endswith('= 100% of the grid\'s best; defaults → best: +24% (grid best {"max_num_seqs": 512})')
