"""tune --predict (tuner.search.predict_search): which trials the model launches, in what order, when it stops, and
what each launched trial keeps — with a fake model and fake measurements (no server, no calibration)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from launch.config import ServeConfig
from perfmodel.costs import Costs
from perfmodel.family import family_of
from perfmodel.rank import Calibration, Prediction
from tuner.search.families import family_launch, launched_family
from tuner.search.predict_model import Model, sample_space
from tuner.search.predict_search import CALIBRATION_ATTR, PREDICTED_ATTR, run_predicted
from tuner.search.predict_stop import STOPPED_ATTR
from tuner.search.space import SpaceContext, suggest_config
from tuner.search.study import enqueue_first, open_study, results_of
from tuner.settings.tune_settings import TuneSettings
from tuner.trial.result import COMPLETE, PRUNED, TrialResult

BASE = ServeConfig(model="/m")
SCTX = SpaceContext(base=BASE, min_model_len=1000, model_max_len=4096, is_cpu=True)
COSTS = Costs(0.004, 2e-5, 5e-5, 1e-13, 0.0, 1e-3, 2e-5)


def truth(config: ServeConfig) -> float:
    """The fake server's capacity: more sequences and bigger batches help; the defaults sustain 10 req/s."""
    if config == BASE:
        return 10.0
    return (config.max_num_seqs or 8) / 8 + (config.max_num_batched_tokens or 512) / 1024


class FakeModel:
    """Predicts truth × (1 + bias); speculative configurations are of a family it has not calibrated."""

    def __init__(self, bias=lambda c: 0.0) -> None:
        self.bias = bias
        self.fits: list[tuple[list[int], int]] = []  # (trials fitted, checks kept) per calibrate call

    def calibrate(self, measured, previous):
        checks = previous.checks if previous is not None else ()
        self.fits.append(([r.number for r in measured], len(checks)))
        return Calibration(family_of(BASE), COSTS, tuple(r.number for r in measured), 0.0, checks)

    def rank(self, configs, cal):
        preds = []
        for c in configs:
            if c.speculative_method:
                preds.append(Prediction(c, None, None, None, unseen=f"engine family {family_of(c)} was not calibrated"))
            else:
                p = truth(c) * (1 + self.bias(c))
                preds.append(Prediction(c, p, p, cal.demonstrated_error))
        return sorted(preds, key=lambda p: (p.capacity_req_s is None, -(p.capacity_req_s or 0.0)))

    def model(self, departures=lambda c: 0) -> Model:
        return Model(self.calibrate, self.rank, departures)


def fake_run_one(trial, device):
    baseline = bool(trial.user_attrs.get("is_baseline"))
    config = BASE if baseline else launched_family(BASE, trial.user_attrs) or suggest_config(trial, SCTX)
    rate = truth(config)
    return TrialResult(trial.number, COMPLETE, baseline, config, slo_met=True, goodput_req_s=rate, best_rate=rate)


def run(tmp_path, fake: FakeModel, trials: int, sample: int = 60, departures=lambda c: 0):
    settings = TuneSettings(
        model="/m", gpu="cpu", slo="ttft_p95=2s", trials=trials, predict=True, predict_sample=sample
    )
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)
    lines: list[str] = []
    ran = run_predicted(study, settings, SCTX, fake.model(departures), fake_run_one, lambda st: None, lines.append)
    return study, ran, lines


def test_of_the_models_ties_the_closest_to_vllms_defaults_launches_first(tmp_path):
    """Every prediction within 1 % of the others (one figure to the model): the first launch is the configuration
    that moves the fewest settings from vLLM's, here max_num_seqs nearest 128; without a count, the top figure."""
    flat = FakeModel(bias=lambda c: 20.0 / truth(c) - 1.0 + 0.01 * (c.max_num_seqs or 8) / 1024)

    def moved(c: ServeConfig) -> int:
        return abs((c.max_num_seqs or 128).bit_length() - 8)

    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    study, _, lines = run(tmp_path / "a", flat, trials=2, departures=moved)
    first = sorted(results_of(study), key=lambda r: r.number)[1].config
    sampled = [c for c in sample_space(SCTX, 60, 0) if not c.speculative_method]
    assert moved(first) == min(moved(c) for c in sampled) < max(moved(c) for c in sampled)
    assert any(f"({moved(first)} engine settings off vLLM's defaults)" in line for line in lines), lines
    study, _, _ = run(tmp_path / "b", flat, trials=2)
    top = sorted(results_of(study), key=lambda r: r.number)[1].config
    assert top.max_num_seqs == max(c.max_num_seqs or 0 for c in sampled) != first.max_num_seqs


def test_launches_the_top_prediction_then_each_unseen_family_then_stops_within_the_error(tmp_path):
    fake = FakeModel()  # exact predictions: the first launch shows an error of 0
    study, ran, lines = run(tmp_path, fake, trials=10)
    results = sorted(results_of(study), key=lambda r: r.number)
    assert ran == len(results) and results[0].is_baseline
    other = FakeModel()
    ranked = other.rank(list(sample_space(SCTX, 60, 0)), other.calibrate([results[0]], None))
    assert results[1].config == ranked[0].config  # the best predicted first
    assert results[1].extra[PREDICTED_ATTR]["predicted_capacity_req_s"] == pytest.approx(truth(results[1].config))
    assert results[2].config.speculative_method  # then the family the model cannot predict, measured
    assert results[2].config == family_launch(BASE, results[2].config)  # at vLLM's defaults with its settings
    assert any("trial 2: COMPLETE" in x and "the model has no speculative steps" in x for x in lines), lines
    assert "calibrates_family" not in study.trials[2].user_attrs  # measured only: challenged at the best so far
    assert "not calibrated" in results[2].extra[PREDICTED_ATTR]["unseen"]
    assert results[2].extra[PREDICTED_ATTR]["predicted_capacity_req_s"] is None
    assert len(results) == 3 < 10  # then it stops: nothing left is predicted above the best measured
    assert any("within the model's demonstrated error (0.0 %; 5 % at least" in line for line in lines), lines
    assert any("not predicted" in line and "launching" in line for line in lines)
    assert fake.fits == [([0], 0), ([0, 1], 1)]  # the defaults, then the defaults and the launch, one check
    stored = study.user_attrs[CALIBRATION_ATTR]
    assert stored["trials"] == [0, 1] and stored["checks"][0]["trial"] == 1


def test_launches_stop_at_trials_when_the_model_keeps_being_wrong(tmp_path):
    # over-predicts by half: its demonstrated error (50 %) is too large to stop the search
    fake = FakeModel(bias=lambda c: 0.5)
    study, ran, lines = run(tmp_path, fake, trials=6)
    results = results_of(study)
    assert len(results) == 6 == ran
    assert len({r.config for r in results}) == 6  # no configuration launched twice
    predicted = [r for r in results if (r.extra.get(PREDICTED_ATTR) or {}).get("predicted_capacity_req_s")]
    assert len(predicted) == 4  # baseline, one per unseen family (1), the rest predicted
    assert not any("no more launches" in line for line in lines)
    assert any("demonstrated error now 50.0 % (over 25 %: not trusted" in line for line in lines), lines
    assert fake.fits[-1][1] == 4  # each predicted launch a check, kept through the refits


def test_defaults_without_capacity_leave_the_search_unguided(tmp_path):
    fake = FakeModel()
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=3, predict=True, predict_sample=20)
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)

    def run_one(trial, device):
        r = fake_run_one(trial, device)
        return TrialResult(r.number, COMPLETE, r.is_baseline, r.config) if r.is_baseline else r

    lines: list[str] = []
    assert run_predicted(study, settings, SCTX, fake.model(), run_one, lambda st: None, lines.append) == 3
    assert "unguided" in lines[0] and fake.fits == []
    assert not any(PREDICTED_ATTR in r.extra for r in results_of(study))


def test_a_resumed_search_launches_each_unseen_family_once(tmp_path):
    # on the H200 (results/h200-llama-3-8b-a30-predict) a --resume after the ngram trial launched another ngram one
    fake = FakeModel(bias=lambda c: 0.5)  # never trusted to stop: every launch up to --trials
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=3, predict=True, predict_sample=60)
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)
    run_predicted(study, settings, SCTX, fake.model(), fake_run_one, lambda st: None, lambda line: None)
    assert [bool(r.config.speculative_method) for r in results_of(study)] == [False, False, True]
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=True, seed=0)
    more = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=5, predict=True, predict_sample=60)
    run_predicted(study, more, SCTX, fake.model(), fake_run_one, lambda st: None, lambda line: None)
    results = sorted(results_of(study), key=lambda r: r.number)
    assert len(results) == 5 and [r.number for r in results if r.config.speculative_method] == [2]


def test_no_launch_starts_when_a_measurement_no_longer_fits_the_time_budget(tmp_path):
    # the first launch of a call used to start whatever was left: its server came up and the budget's gate then
    # gave it up unmeasured (a wasted start on the H200)
    from tuner.trial.scheduler import Scheduler
    from tuner.trial.time_budget import TimeBudget

    now = [0.0]
    budget = TimeBudget(100.0, clock=lambda: now[0])
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=4, predict=True, predict_sample=20)
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)

    def run_one(trial, device):
        with budget.measuring():  # the defaults' measurement takes 60 s of the 100
            now[0] += 60.0
        return fake_run_one(trial, device)

    lines: list[str] = []
    sched = Scheduler.for_devices([None], overlap=False, layouts=False, budget=budget)
    run_predicted(study, settings, SCTX, FakeModel().model(), run_one, lambda st: None, lines.append, sched)
    assert len(results_of(study)) == 1  # 40 s left: less than a measurement
    assert any("time budget nearly spent (40 s left, less than a measurement takes here)" in x for x in lines), lines


def test_a_resumed_call_judges_its_first_launch_by_the_studys_launches(tmp_path):
    # a measurement (60 s) fits in the 140 s left, but a launch (start and measurement: 150 s here) does not

    from tuner.trial.scheduler import Scheduler
    from tuner.trial.time_budget import TimeBudget

    now = [0.0]
    budget = TimeBudget(200.0, clock=lambda: now[0])
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=4, predict=True, predict_sample=20)
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)

    def run_one(trial, device):
        with budget.measuring():
            now[0] += 60.0
        return replace(fake_run_one(trial, device), timeline={"launched": 1000.0, "ready": 1090.0, "stopped": 1150.0})

    lines: list[str] = []
    sched = Scheduler.for_devices([None], overlap=False, layouts=False, budget=budget)
    run_predicted(study, settings, SCTX, FakeModel().model(), run_one, lambda st: None, lines.append, sched)
    assert len(results_of(study)) == 1
    assert any("time budget nearly spent (140 s left, a launch takes 150 s here)" in x for x in lines), lines


def counting(fake: FakeModel) -> tuple[Model, list[int]]:
    """``fake`` as a Model, and the size of each ranking it is asked for."""
    ranked: list[int] = []
    return Model(fake.calibrate, lambda configs, cal: ranked.append(len(configs)) or fake.rank(configs, cal)), ranked


def fresh_study(tmp_path):
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)
    return study


def test_a_resumed_call_with_nothing_left_to_launch_ranks_nothing(tmp_path):
    # on the H200 (results/h200-llama-3-8b-a30-predict-2026-12-02-b) the call that only certified spent 33 s ranking
    model, ranked = counting(FakeModel())
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=2, predict=True, predict_sample=20)
    study = fresh_study(tmp_path)
    run_predicted(study, settings, SCTX, model, fake_run_one, lambda st: None, lambda line: None)
    assert len(results_of(study)) == 2 and ranked
    ranked.clear()
    lines: list[str] = []
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=True, seed=0)
    assert run_predicted(study, settings, SCTX, model, fake_run_one, lambda st: None, lines.append) == 0
    assert ranked == [] and "nothing to rank or launch" in lines[-1]


def test_random_weights_spend_no_launch_on_speculation(tmp_path):
    # --load-format dummy: no unseen speculative family in the sample, so every launch after the defaults is a
    # prediction (the first H200 run spent two of its four launches on ngram, which random weights never accept)
    dummy = SpaceContext(
        base=ServeConfig(model="/m", load_format="dummy"), min_model_len=1000, model_max_len=4096, is_cpu=True
    )
    assert not any(c.speculative_method for c in sample_space(dummy, 60, 0))
    fake = FakeModel(bias=lambda c: 0.5)  # never trusted to stop: every launch up to --trials
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=4, predict=True, predict_sample=60)
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)

    def run_one(trial, device):
        baseline = bool(trial.user_attrs.get("is_baseline"))
        config = dummy.base if baseline else suggest_config(trial, dummy)
        return TrialResult(
            trial.number, COMPLETE, baseline, config, slo_met=True, goodput_req_s=truth(config), best_rate=truth(config)
        )

    lines: list[str] = []
    run_predicted(study, settings, dummy, fake.model(), run_one, lambda st: None, lines.append)
    results = results_of(study)
    assert len(results) == 4 and not any(r.config.speculative_method for r in results)
    assert all(r.extra[PREDICTED_ATTR]["predicted_capacity_req_s"] for r in results if not r.is_baseline)
    assert not any("not calibrated" in line for line in lines), lines


def test_sample_space_draws_distinct_configs_that_the_params_reproduce():
    import optuna

    configs = sample_space(SCTX, 40, seed=1)
    assert 10 < len(configs) <= 40
    study = optuna.create_study()
    for config, params in list(configs.items())[:5]:
        study.enqueue_trial(params)
        assert suggest_config(study.ask(), SCTX) == config


# ---- what the files say -------------------------------------------------------------------------------------


def test_a_resumed_call_after_the_search_stopped_itself_ranks_nothing_until_a_trial_or_the_sample_changes(tmp_path):
    # on the H200 (results/h200-llama-3-8b-a30-predict-2026-12-03-e) each call after the stop ranked 200 again
    # (26-37 s) to reach the same stop, twice in the call that certified
    model, ranked = counting(FakeModel())
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=10, predict=True, predict_sample=60)
    study = fresh_study(tmp_path)
    lines: list[str] = []
    run_predicted(study, settings, SCTX, model, fake_run_one, lambda st: None, lines.append)
    assert len(results_of(study)) == 3 and any("no more launches" in line for line in lines)
    stored = study.user_attrs[STOPPED_ATTR]
    assert stored["trials"] == [0, 1, 2] and "demonstrated error" in stored["reason"]

    ranked.clear()
    lines.clear()
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=True, seed=0)
    assert run_predicted(study, settings, SCTX, model, fake_run_one, lambda st: None, lines.append) == 0
    assert ranked == [] and "stopped on these 3 trials before" in lines[-1] and "nothing to rank" in lines[-1]

    other = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=10, predict=True, predict_sample=30)
    run_predicted(study, other, SCTX, model, fake_run_one, lambda st: None, lines.append)
    assert ranked, "another sample is ranked again"


def test_a_stop_recorded_on_other_trials_or_another_sample_does_not_hold(tmp_path):
    from tuner.search.predict_stop import Stopped, record_stop, sample_fingerprint, stopped_on

    a, b = ServeConfig(model="/m", max_num_seqs=8), ServeConfig(model="/m", max_num_seqs=16)
    assert sample_fingerprint([a, b]) == sample_fingerprint([b, a]) != sample_fingerprint([a])
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    assert stopped_on(study, [0], sample_fingerprint([a])) is None
    both = sample_fingerprint([a, b])
    record_stop(study, [2, 0, 1], both, "why")
    assert stopped_on(study, [0, 1, 2], sample_fingerprint([b, a])) == Stopped((0, 1, 2), both, "why")
    assert stopped_on(study, [0, 1, 2, 3], both) is None  # a trial since
    assert stopped_on(study, [0, 1, 2], sample_fingerprint([a])) is None  # another sample


def test_an_unseen_family_pruned_at_the_best_so_far_is_neither_refitted_on_nor_fatal(tmp_path):
    fake = FakeModel()
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", trials=10, predict=True, predict_sample=60)
    study = open_study(f"sqlite:///{tmp_path}/s.db", resume=False, seed=0)
    enqueue_first(study, [], baseline=True)
    missed = "it missed 70.00 req/s, the best capacity so far, at its first level: it cannot win"

    def run_one(trial, device):  # the speculative family's launch misses the best so far at its first level
        r = fake_run_one(trial, device)
        return (
            replace(r, state=PRUNED, slo_met=False, best_rate=None, fail_reason=missed)
            if r.config.speculative_method
            else r
        )

    lines: list[str] = []
    run_predicted(study, settings, SCTX, fake.model(), run_one, lambda st: None, lines.append)
    pruned = [r for r in results_of(study) if r.state == PRUNED]
    assert len(pruned) == 1 and pruned[0].config.speculative_method
    assert any(f"trial {pruned[0].number}: PRUNED, {missed} (not refitted on)" in line for line in lines), lines
    assert all(pruned[0].number not in trials for trials, _ in fake.fits)
    assert any("no more launches" in line for line in lines)  # the search went on to its own stop
