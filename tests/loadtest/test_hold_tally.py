"""bench/hold_tally.py: draws of one rate tallied, with an exact interval for the chance that a draw holds."""

import json

import pytest

from bench.hold_tally import Draw, draw_of, main, tally


def test_draws_group_by_rate_and_seconds_and_unjudged_runs_count_apart():
    draws = [
        Draw(2.256, 180, True, 2.25),
        Draw(2.256, 180, True, 2.31),
        Draw(2.48, 180, False, 2.478),
        Draw(2.48, 180, True, 2.49),
        Draw(2.48, 180, None, None),
        Draw(2.256, 600, True, 2.26),
    ]
    got = tally(draws)
    assert [(t.rate, t.seconds, t.held, t.draws, t.unjudged) for t in got] == [
        (2.256, 180, 2, 2, 0),
        (2.256, 600, 1, 1, 0),
        (2.48, 180, 1, 2, 1),
    ]
    assert (got[0].sent_min, got[0].sent_max) == (2.25, 2.31)


def test_four_of_four_bounds_a_miss_only_loosely():
    (t,) = tally([Draw(1.0, 120, True, None) for _ in range(4)])
    assert t.high == 1.0
    assert t.low == pytest.approx(0.05 ** (1 / 4))  # exact: the p at which 4 of 4 has a 5 % chance
    (m,) = tally([Draw(1.0, 120, i < 3, None) for i in range(5)])  # 3 of 5
    assert 0.18 < m.low < 0.2 and 0.9 < m.high < 0.95


def test_a_file_of_another_shape_exits_2_naming_it(tmp_path, capsys):
    bad = tmp_path / "report.json"
    bad.write_text(json.dumps({"summary": {}}))
    with pytest.raises(ValueError, match="report.json"):
        draw_of(bad)
    assert main([str(bad)]) == 2
    assert "report.json" in capsys.readouterr().err


def test_main_prints_one_row_per_rate(tmp_path, capsys):
    for i, held in enumerate([True, False]):
        (tmp_path / f"r{i}.json").write_text(
            json.dumps({"rate": 2.48, "seconds": 180.0, "held": held, "sent_rate_req_s": 2.48})
        )
    assert main([str(p) for p in sorted(tmp_path.glob("*.json"))]) == 0
    out = capsys.readouterr().out
    assert "| 2.480 | 180 | 1 / 2 |" in out
