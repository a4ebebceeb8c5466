"""tuner.certify.spare_speed: how much slower a machine may be before a stated rate tips, by the model; and
tuner.search.predict_spare.current_spare, which keeps a stored one only while it describes the best's stated rate."""

from __future__ import annotations

import html
from types import SimpleNamespace

import pytest

from loadtest.dist import Dist
from loadtest.lengths import LengthDist
from loadtest.slo import parse_slos
from loadtest.workload import Workload
from perfmodel.anchor import anchor_speed, mean_tpot_ms
from perfmodel.config import EngineConfig
from perfmodel.costs import Costs
from perfmodel.traffic import Demand
from tuner.certify.spare_speed import SlowedDraws, SpareSpeed, spare_speed
from tuner.report.report_html import _spare
from tuner.search.predict_spare import current_spare, soaks_kv_tokens, soaks_mean_tpot_ms


def one_at_a_time(step_s: float) -> tuple[EngineConfig, Costs, Demand]:
    """One sequence at a time, one-token answers, every step ``step_s``: an M/D/1 queue whose load is rate x step."""
    engine = EngineConfig(1, 8192, True, False, 100_000, 16, 8192, 0)
    costs = Costs(step_s, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    workload = Workload("tiny", LengthDist("fixed", 8, 8), LengthDist("fixed", 1, 1))
    return engine, costs, Demand(workload, parse_slos("ttft_p95=500ms"))


def test_a_queue_at_70_percent_load_holds_here_and_tips_once_its_steps_outlast_the_gaps():
    """rate x step = 0.7: at 1.0x the p95 wait stays far under the SLO; 1.3x slower is 0.91 load, 1.5x is over 1
    (the queue grows without bound), so the model must see the rate tip by then."""
    engine, costs, demand = one_at_a_time(0.01)
    found = spare_speed(3, 70.0, 60.0, engine, costs, demand, (0,), factors=(1.0, 1.1, 1.3, 1.5, 2.0))
    assert found.spare is not None and found.spare >= 1.1
    tip = found.tips_at
    assert tip is not None and tip.factor <= 1.5 and tip.held < tip.draws
    assert found.slowed[-1] == tip  # once every draw tipped, slower machines are not tried
    assert found.slowed[0] == SlowedDraws(1.0, 4, 4, 0)


def test_without_the_slowdown_every_factor_would_hold():
    """The same queue at a tenth of the load holds on every machine tried: nothing tips."""
    engine, costs, demand = one_at_a_time(0.001)
    found = spare_speed(3, 70.0, 30.0, engine, costs, demand, (0,), factors=(1.0, 1.3))
    assert found.tips_at is None and found.spare == 1.3
    assert "held 4 of 4 draws on steps up to 30 % slower" in found.line()


def record(*held: int, error: float | None = -0.004) -> SpareSpeed:
    factors = (1.0, 1.05, 1.1, 1.15)
    slowed = tuple(SlowedDraws(f, h, 4, 10 * k) for k, (f, h) in enumerate(zip(factors, held, strict=False)))
    return SpareSpeed(1, 59.595, 90.0, (0, 1), slowed, error, None, 10.56, 1.023)


def test_the_spare_speed_is_the_last_factor_before_the_first_tipped_draw():
    spare = record(4, 4, 2, 0)
    assert spare.spare == 1.05 and spare.tips_at == SlowedDraws(1.1, 2, 4, 20)
    assert spare.line() == (
        "spare speed of trial 1 (the performance model, calibrated on trials 0, 1 and set to the speed of its soaks: "
        "steps x1.02 the calibration's, for their mean TPOT of 10.6 ms; its capacity predicted -0.4 % off the rate "
        "held): 59.595 req/s over 90-s windows held 4 of 4 draws on steps up to 5 % slower; 10 % "
        "slower, 2 of 4 draws tipped (up to 20 preemptions a draw): a figure for machines at most about 5 % slower "
        "than the one that measured it"
    )
    assert SpareSpeed.from_dict(spare.to_dict()) == spare


def test_the_studys_own_miss_above_caps_what_the_model_spares_at_its_last_step_under_the_miss():
    """A rate 6.9 % above missed here: a machine 6.9 % slower serves the stated rate as this one served that rate,
    so however much the model spares, the figure is its last step under that (5 %): just inside the bound a draw runs
    at the miss's edge (a 9.6 % bound missed 1 of 2 draws slowed 9 %, results/cpu-spare-speed-unguided-2026-12-07)."""
    slowed = tuple(SlowedDraws(f, 4, 4, 0) for f in (1.0, 1.05, 1.1, 1.15, 1.2)) + (SlowedDraws(1.3, 0, 4, 0),)
    spare = SpareSpeed(3, 32.529, 120.0, (0, 1), slowed, 0.185, 34.774)
    assert spare.modelled == 1.2 and spare.capped and spare.bound == pytest.approx(34.774 / 32.529)
    assert spare.spare == 1.05
    assert spare.line().endswith(
        "held 4 of 4 draws on steps up to 20 % slower, but a rate 6.9 % higher, 34.774 req/s, missed here, and a "
        "machine that much slower serves the stated rate as this one served that: a figure for machines at most "
        "about 5 % slower (the model's last step under that 6.9 %)"
    )
    assert SpareSpeed.from_dict(spare.to_dict()) == spare
    below = SpareSpeed(3, 32.529, 120.0, (0, 1), slowed, 0.185, 40.0)  # the miss above the model's tip: no cap
    assert not below.capped and below.spare == 1.2
    close = SpareSpeed(3, 32.529, 120.0, (0, 1), slowed, 0.185, 33.9)  # a miss 4.2 % above: no step under it but 1.0
    assert close.spare == 1.0 and close.line().endswith(
        "a figure for machines no slower than the one that measured it (the model's last step under that 4.2 %)"
    )


def test_a_trial_the_model_was_fitted_on_says_it_was_not_predicted():
    spare = record(4, 2, error=None)
    assert "for their mean TPOT of 10.6 ms; not predicted before its launch)" in spare.line()
    assert SpareSpeed.from_dict(spare.to_dict()) == spare


def test_where_the_model_does_not_reproduce_the_held_soaks_no_spare_speed_is_stated():
    spare = record(3)
    assert spare.spare is None
    assert spare.line().endswith(
        ": not stated, 1 of 4 draws tipped (up to 0 preemptions a draw) at the speed that certified it, where the "
        "soaks held: the model does not describe this edge"
    )


def test_an_edge_with_nothing_to_spare_is_a_figure_for_machines_no_slower():
    spare = record(4, 1)
    assert spare.spare == 1.0
    assert spare.line().endswith(
        "held 4 of 4 draws at the speed that certified it; 5 % slower, 3 of 4 draws tipped (up to 10 preemptions a "
        "draw): a figure for machines no slower than the one that measured it"
    )


def test_a_stored_spare_speed_is_stated_only_for_the_current_best_at_its_stated_rate():
    stored = record(4, 4, 2).to_dict()
    best = SimpleNamespace(number=1)
    cert = SimpleNamespace(certified_rate=59.595)
    assert current_spare(stored, best, {1: cert}) == stored  # type: ignore[arg-type]
    assert current_spare(stored, best, {1: SimpleNamespace(certified_rate=53.636)}) is None  # type: ignore[arg-type]
    assert current_spare(stored, SimpleNamespace(number=2), {2: cert}) is None  # type: ignore[arg-type]
    assert current_spare(None, best, {1: cert}) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("meta", [{}, {"spare_speed": record(4, 2).to_dict()}])
def test_the_report_states_the_line_best_json_keeps(meta):
    shown = html.unescape(_spare(meta))
    assert (meta == {}) == (shown == "")
    if meta:
        assert meta["spare_speed"]["line"] in shown


def one_at_a_time_answering(step_s: float, tokens: int = 5) -> tuple[EngineConfig, Costs, Demand]:
    """As ``one_at_a_time``, but answers of ``tokens`` tokens: a request's TPOT is then one step."""
    engine, costs, _ = one_at_a_time(step_s)
    workload = Workload("tiny", LengthDist("fixed", 8, 8), LengthDist("fixed", tokens, tokens))
    return engine, costs, Demand(workload, parse_slos("ttft_p95=500ms"))


def test_the_model_is_set_to_the_speed_its_soaks_measured_before_it_is_slowed():
    """The calibration says 2-ms steps; the soaks measured a TPOT the model gives on steps 1.25 times as long. Set to
    that speed, the stated rate tips at a smaller slowdown than the calibration alone would say."""
    engine, costs, demand = one_at_a_time_answering(0.002)
    rate, factors = 50.0, (1.0, 1.1, 1.2, 1.3, 1.4, 1.6, 1.8)  # 5 steps a request: load 0.5 at the calibration
    loads = [demand.open_level(rate, 600, seed) for seed in (1, 2)]
    measured = mean_tpot_ms(engine, costs.slowed(1.25), loads)
    assert measured is not None and measured > mean_tpot_ms(engine, costs, loads)  # type: ignore[operator]
    assert anchor_speed(engine, costs, loads, measured) == pytest.approx(1.25, rel=1e-3)
    plain = spare_speed(3, rate, 12.0, engine, costs, demand, (0,), factors=factors)
    set_to = spare_speed(3, rate, 12.0, engine, costs, demand, (0,), measured_tpot_ms=measured, factors=factors)
    assert set_to.anchor == pytest.approx(1.25, rel=1e-3) and set_to.measured_tpot_ms == measured
    assert plain.spare is not None and set_to.spare is not None and set_to.spare < plain.spare
    assert "and set to the speed of its soaks: steps x1.25 the calibration's, for their mean TPOT of" in set_to.line()
    assert SpareSpeed.from_dict(set_to.to_dict()) == set_to


def test_a_tpot_no_speed_from_half_to_twice_reaches_states_nothing():
    engine, costs, demand = one_at_a_time_answering(0.002)
    loads = [demand.open_level(50.0, 200, 1)]
    assert anchor_speed(engine, costs, loads, 0.5) is None  # faster than half the calibration's steps give
    found = spare_speed(3, 50.0, 4.0, engine, costs, demand, (0,), measured_tpot_ms=0.5)
    assert found.unanchorable and found.slowed == () and found.spare is None
    assert found.line().endswith(
        ": not stated, no speed from half to twice its calibration's gives the model the soaks' mean TPOT of 0.5 ms: "
        "the model does not describe this edge"
    )
    assert SpareSpeed.from_dict(found.to_dict()) == found


def test_the_soaks_tpot_is_weighted_by_their_answers_and_their_kv_tokens_are_the_fewest():
    def soak(mean: float | None, ok: int, tokens: int | None) -> SimpleNamespace:
        server = SimpleNamespace(kv_cache_tokens=tokens)
        return SimpleNamespace(report=SimpleNamespace(tpot_ms=Dist(mean=mean), requests_ok=ok, server=server))

    soaks = [soak(10.0, 100, 54_448), soak(13.0, 300, 48_160), soak(None, 50, None)]
    assert soaks_mean_tpot_ms(soaks) == pytest.approx(12.25)  # type: ignore[arg-type]
    assert soaks_kv_tokens(soaks) == 48_160  # type: ignore[arg-type]
    assert soaks_mean_tpot_ms([]) is None and soaks_kv_tokens([soak(None, 0, None)]) is None  # type: ignore[list-item]


def test_a_rate_stated_a_step_below_the_held_one_is_set_to_the_held_soaks_speed_and_says_so():
    """Run h's first study stated 59.595 req/s, a KV step below the 66.217 its soaks held, and soaked nothing at
    59.595: the model is set to the speed of the soaks at 66.217."""
    engine, costs, demand = one_at_a_time_answering(0.002)
    loads = [demand.open_level(60.0, 720, seed) for seed in (1, 2)]
    measured = mean_tpot_ms(engine, costs.slowed(1.1), loads)
    found = spare_speed(3, 50.0, 12.0, engine, costs, demand, (0,), None, None, measured, 60.0, factors=(1.0, 1.2))
    assert found.anchor == pytest.approx(1.1, rel=1e-3) and found.measured_at_req_s == 60.0
    assert "set to the speed of its soaks at 60.000 req/s: steps x1.10 the calibration's" in found.line()
    assert SpareSpeed.from_dict(found.to_dict()) == found


def test_without_a_measured_tpot_the_line_says_the_model_was_not_set_to_one():
    slowed = (SlowedDraws(1.0, 4, 4, 0), SlowedDraws(1.05, 0, 4, 0))
    spare = SpareSpeed(1, 59.595, 90.0, (0, 1), slowed, None)
    assert spare.line().startswith(
        "spare speed of trial 1 (the performance model, calibrated on trials 0, 1, not set to a measured speed (no "
        "soak that held gave a TPOT); not predicted before its launch): 59.595 req/s"
    )


def test_without_a_stored_calibration_the_best_family_s_launches_are_fitted_defaults_first_then_the_best():
    """calibration_trials: vLLM's defaults (the model fits the family of the first), the best, then the family's
    highest measured; another family (an fp8 cache), a failed or SLO-missing trial is never fitted on."""
    from launch.config import ServeConfig
    from perfmodel.family import family_of
    from tuner.search.predict_spare import CALIBRATION_TRIALS, calibration_trials
    from tuner.trial.result import TrialResult

    auto = ServeConfig(model="/m")
    fp8 = ServeConfig(model="/m", kv_cache_dtype="fp8")

    def trial(n: int, rate: float, config: ServeConfig = auto, state: str = "COMPLETE", met: bool = True):
        return TrialResult(n, state, n == 0, config, slo_met=met, goodput_req_s=rate, best_rate=rate)

    best = trial(3, 9.0)
    results = [trial(0, 5.0), trial(1, 8.0), trial(2, 12.0, fp8), best, trial(4, 7.5), trial(5, 11.0, met=False),
               trial(6, 10.0, state="FAIL"), trial(7, 8.5)]  # fmt: skip
    picked = calibration_trials(results, family_of(auto), best)
    assert [r.number for r in picked] == [0, 3, 7][:CALIBRATION_TRIALS]
    assert [r.number for r in calibration_trials(results, family_of(fp8), results[2])] == [2]
    assert [r.number for r in calibration_trials(results[1:], family_of(auto), best)] == [3, 7, 1]
