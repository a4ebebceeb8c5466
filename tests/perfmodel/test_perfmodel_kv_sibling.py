"""perfmodel.kv_sibling: a family that differs from a calibrated one by its KV dtype only is calibrated on its first
launch by one coefficient, the cost of a KV byte read; measurements the model itself produced give it back."""

from __future__ import annotations

from dataclasses import replace

import pytest

from launch.config import ServeConfig
from perfmodel.family import family_of
from perfmodel.kv_sibling import calibrate_kv_sibling, kv_read_multiple, kv_siblings
from perfmodel.rank import Calibration, Check
from tests.perfmodel.test_perfmodel_rank import BASE, TRUTH, observed_trial

FP8 = replace(BASE, kv_cache_dtype="fp8")
AUTO_CAL = Calibration(family_of(BASE), TRUTH, (0,), 0.0, (Check(1, 11.0, 10.0),))


def test_kv_siblings_differ_by_the_kv_dtype_and_nothing_else():
    auto, fp8 = family_of(BASE), family_of(FP8)
    assert kv_siblings(fp8, auto) and kv_siblings(auto, fp8)
    assert not kv_siblings(auto, auto)
    assert not kv_siblings(family_of(ServeConfig("/models/m-w4a16", kv_cache_dtype="fp8")), auto)
    assert not kv_siblings(family_of(replace(FP8, tensor_parallel_size=2)), auto)


def test_one_launch_gives_back_the_kv_read_cost_and_keeps_the_siblings_other_costs():
    slow_reads = replace(TRUTH, per_kv_byte_s=6 * TRUTH.per_kv_byte_s)
    measured = observed_trial(FP8, 2, costs=slow_reads, seqs=256)
    cal = calibrate_kv_sibling([measured], AUTO_CAL)
    assert cal.family == family_of(FP8) and cal.trials == (2,) and cal.checks == ()
    assert kv_read_multiple(cal, AUTO_CAL) == pytest.approx(6.0, rel=0.05)
    assert replace(cal.costs, per_kv_byte_s=TRUTH.per_kv_byte_s) == TRUTH


def test_a_family_that_is_no_kv_sibling_or_mixed_trials_are_refused():
    other_weights = observed_trial(ServeConfig("/models/m-w4a16", kv_cache_dtype="fp8"), 2)
    with pytest.raises(ValueError, match="not a KV-dtype sibling"):
        calibrate_kv_sibling([other_weights], AUTO_CAL)
    with pytest.raises(ValueError, match="not of the engine family"):
        calibrate_kv_sibling([observed_trial(FP8, 2), observed_trial(BASE, 3)], AUTO_CAL)
    with pytest.raises(ValueError, match="at least one"):
        calibrate_kv_sibling([], AUTO_CAL)
