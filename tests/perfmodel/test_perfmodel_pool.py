"""The model's simulations over several processes give the answer one process gives, in the same order."""

from __future__ import annotations

import pytest

from launch.config import ServeConfig
from perfmodel.calibrate import fit
from perfmodel.costs import Costs
from perfmodel.pool import parallel_map, worker_count
from perfmodel.rank import Candidate, rank
from tests.perfmodel.test_perfmodel_rank import BASE, CHAT, QUICK, TRUTH, calibration, engine, observed_trial


def test_worker_count_is_capped_by_the_tasks_and_refuses_zero():
    assert worker_count(8, 3) == 3
    assert worker_count(4, 0) == 1
    assert 1 <= worker_count(None, 1000)
    with pytest.raises(ValueError, match="at least 1"):
        worker_count(0, 5)


def test_parallel_map_keeps_the_items_order():
    assert parallel_map(abs, [-3, 1, -2, 5, -4], workers=2) == [3, 1, 2, 5, 4]


def test_a_ranking_over_two_processes_is_the_ranking_over_one():
    cands = [Candidate(ServeConfig("/models/m", max_num_seqs=s), engine(s)) for s in (4, 256, 32, 64)]
    one = rank(cands, calibration(), CHAT, QUICK, workers=1)
    two = rank(cands, calibration(), CHAT, QUICK, workers=2)
    assert one == two
    assert [p.config.max_num_seqs for p in one][-1] == 4


def test_a_fit_over_two_processes_is_the_fit_over_one():
    trials = [observed_trial(BASE, 0), observed_trial(BASE, 1, seqs=32)]
    start = Costs(0.01, 1e-5, 1e-5, TRUTH.per_kv_byte_s, 0.0, 3e-3, 1e-5)
    one = fit(trials, start, max_evaluations=30, workers=1)
    two = fit(trials, start, max_evaluations=30, workers=2)
    assert one == two
    assert one.loss > 0 and 0 < one.evaluations <= 30
