"""What else ran on the host during each measurement, from the trials' timelines (tuner.report.company)."""

import pandas as pd
import pytest

from launch.config import ServeConfig
from tuner.report.company import company
from tuner.report.outputs import trials_frame
from tuner.trial.result import COMPLETE, TrialResult


def timed(n, host="h1", **tl):
    timeline = {"host": host, "device": "0", **tl}
    return TrialResult(
        n,
        COMPLETE,
        n == 0,
        ServeConfig(model="/m", max_num_seqs=8 + n),
        slo_met=True,
        goodput_req_s=1.0,
        timeline=timeline,
    )


def test_others_startups_and_presence_during_each_measurement():
    results = [
        timed(0, launched=10.0, ready=100.0, measured=[100.0, 300.0], stopped=305.0),
        # started during trial 0's measurement, waited, then measured once trial 0's server was stopped
        timed(1, launched=110.0, ready=230.0, measured=[305.0, 395.0], stopped=400.0),
        timed(2, host="h2", launched=100.0, ready=150.0, measured=[150.0, 300.0], stopped=310.0),  # other host
        TrialResult(3, COMPLETE, False, ServeConfig(model="/m"), slo_met=True, goodput_req_s=1.0),  # no timeline
        timed(4, launched=250.0, stopped=260.0),  # a launch that failed: a startup, never up, never measured
    ]
    met = company({r.number: r.timeline for r in results if r.timeline})
    assert set(met) == {0, 1, 2}
    assert met[0].others_starting_s == pytest.approx(120.0 + 10.0)  # trial 1's 110→230, trial 4's 250→260
    assert met[0].others_up_mean == pytest.approx(70.0 / 200.0)  # trial 1 up from 230 on
    assert met[1].others_starting_s == 0.0 and met[1].others_up_mean == 0.0  # trial 0 stopped at 305
    assert met[2].others_starting_s == 0.0 and met[2].others_up_mean == 0.0
    frame = trials_frame(results).set_index("number")
    assert frame.loc[0, "others_starting_s"] == 130.0 and frame.loc[0, "others_up_mean"] == 0.35
    assert frame.loc[3, "others_starting_s"] is pd.NA
