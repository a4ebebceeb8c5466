"""tuner.trial.time_budget: when a trial's measurement would overrun --time-budget (the clock is injected)."""

import pytest

from tuner.trial.time_budget import TimeBudget


def test_gives_up_only_once_a_typical_measurement_no_longer_fits():
    now = [0.0]
    d = TimeBudget(600.0, clock=lambda: now[0])
    now[0] = 599.0
    assert d.left() == 1.0
    assert d.overrun() is None  # nothing measured yet: nothing to judge by
    for took in (100.0, 300.0, 200.0):  # median 200 s
        began = now[0] = 0.0
        with d.measuring():
            now[0] = began + took
    now[0] = 400.0
    assert d.overrun() is None  # 200 s left, 200 s needed
    now[0] = 401.0
    assert d.overrun() == (
        "time budget: 199 s left, a measurement takes 200 s here (median of 3); "
        "given up before measuring, resume to run it"
    )
    now[0] = 700.0
    assert "0 s left" in d.overrun()


def test_a_measurement_that_raises_is_not_recorded():
    now = [0.0]
    d = TimeBudget(10.0, clock=lambda: now[0])
    with pytest.raises(KeyboardInterrupt), d.measuring():
        now[0] = 50.0
        raise KeyboardInterrupt
    assert d.overrun() is None  # 50 s would not fit in what is left, but it never finished
    with pytest.raises(ValueError):
        TimeBudget(0.0)
