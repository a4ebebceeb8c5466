"""The capacity search seeded by a predicted capacity (tune --predict), against the scripted server of
test_measure (its SLO holds while the rate is under 0.8 x its capacity)."""

from dataclasses import replace

from tests.tuner.test_measure import SLOS, FakeReport, server
from tuner.search.families import CALIBRATES_ATTR
from tuner.trial.capacity import MeasurePlan, capacity_search
from tuner.trial.context import TrialContext
from tuner.trial.result import PREDICTED, Predicted
from tuner.tune_setup import seeded_context


def _rates(res):
    return [lv.rate for lv in res.levels if lv.kind == "rate"]


def test_a_close_prediction_saves_levels_and_keeps_the_precision():
    def probe(conc, n):  # on the H200 the closed-loop probe read ~0.55 of the capacity (40 of ~70 req/s)
        return FakeReport(900.0, 55.0, 55.0)

    run_rate, _, _ = server(capacity=100.0)  # the edge: 80 req/s
    unseeded = capacity_search(run_rate, probe, MeasurePlan(), SLOS)
    run_rate, _, _ = server(capacity=100.0)
    seeded = capacity_search(run_rate, probe, MeasurePlan(expected_req_s=84.0), SLOS)
    assert 77.0 <= seeded.best_rate < 80.0 and 77.0 <= unseeded.best_rate < 80.0
    assert len(_rates(seeded)) <= len(_rates(unseeded)) - 2
    assert _rates(seeded)[:2] == [0.85 * 84.0, 1.075 * 84.0]
    missed = min(r for r in _rates(seeded) if r > seeded.best_rate)
    assert missed / seeded.best_rate - 1 <= 0.035  # the bracket it ended on


def test_a_prediction_far_too_high_falls_back_to_the_low_level():
    run_rate, run_probe, _ = server(capacity=100.0)
    res = capacity_search(run_rate, run_probe, MeasurePlan(expected_req_s=140.0), SLOS)
    rates = _rates(res)
    assert rates[0] == 0.85 * 140.0 and rates[1] == 0.15 * 100.0  # the seed missed: the low level next
    assert 70.0 <= res.best_rate < 80.0  # bisected between the low level and the missed seed


def test_a_prediction_far_too_low_widens_the_bracket():
    run_rate, run_probe, _ = server(capacity=100.0)
    res = capacity_search(run_rate, run_probe, MeasurePlan(expected_req_s=40.0), SLOS)
    assert 74.0 <= res.best_rate < 80.0 and max(_rates(res)) > 80.0


def test_nothing_holds_when_the_seed_and_the_low_level_miss():
    run_rate, run_probe, _ = server(capacity=10.0, base_ttft=5000.0)
    res = capacity_search(run_rate, run_probe, MeasurePlan(expected_req_s=8.0), SLOS)
    assert not res.slo_met and len(_rates(res)) == 2


def _ctx() -> TrialContext:
    return TrialContext(None, None, SLOS, None, MeasurePlan(), "python", None)  # only the plan is read


def test_a_trial_enqueued_with_a_prediction_gets_a_seeded_plan():
    said: list[str] = []
    attrs = {PREDICTED: Predicted(76.0, 0.09).to_dict()}
    ctx = seeded_context(_ctx(), attrs, said.append)
    assert ctx.plan == replace(MeasurePlan(), expected_req_s=76.0)
    assert said == ["levels seeded by the prediction: 64.60 and 81.70 req/s first (76.000 predicted)"]


def test_an_unpredicted_trial_keeps_the_runs_plan():
    said: list[str] = []
    ctx = _ctx()
    unseen = {PREDICTED: Predicted(None, unseen="engine family not calibrated").to_dict()}
    assert seeded_context(ctx, unseen, said.append) is ctx
    assert seeded_context(ctx, {}, said.append) is ctx and said == []


def test_a_launch_that_misses_the_best_so_far_stops_at_its_first_level():
    run_rate, run_probe, calls = server(capacity=100.0)  # the edge: 80 req/s
    res = capacity_search(run_rate, run_probe, MeasurePlan(challenge_req_s=90.0), SLOS)
    assert calls == [90.0] and not res.slo_met
    assert res.abandoned.startswith("it missed 90.00 req/s, the best capacity so far") and "cannot win" in res.abandoned
    assert res.closest is not None  # how far it missed stays in the trial


def test_a_launch_that_holds_the_best_so_far_is_searched_upward_from_it():
    run_rate, run_probe, _ = server(capacity=100.0)
    res = capacity_search(run_rate, run_probe, MeasurePlan(challenge_req_s=60.0), SLOS)
    rates = _rates(res)
    assert rates[0] == 60.0 and min(rates) == 60.0  # no level below the rate it had to beat
    assert res.abandoned is None and 74.0 <= res.best_rate < 80.0


def test_an_unpredicted_launch_has_to_beat_the_best_so_far():
    said: list[str] = []
    ctx = replace(_ctx(), best_capacity=lambda: 64.628)
    unseen = {PREDICTED: Predicted(None, unseen="engine family not calibrated").to_dict()}
    challenged = seeded_context(ctx, unseen, said.append)
    assert challenged.plan == replace(MeasurePlan(), challenge_req_s=64.628)
    assert said == ["not predicted: its first level is the best capacity so far, 64.63 req/s; a miss there ends it"]
    assert seeded_context(ctx, {}, said.append) is ctx  # an unguided trial (no --predict) is measured in full


def test_an_unpredicted_launch_that_calibrates_its_family_is_measured_in_full():
    said: list[str] = []
    ctx = replace(_ctx(), best_capacity=lambda: 64.628)
    unseen = {PREDICTED: Predicted(None, unseen="engine family not calibrated").to_dict(), CALIBRATES_ATTR: True}
    assert seeded_context(ctx, unseen, said.append) is ctx  # no challenge: a miss at the best so far would end it
    assert said == ["not predicted: measured in full, as the defaults are, to calibrate its engine family"]
