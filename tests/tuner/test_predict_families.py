"""tune --predict beyond the defaults' engine family (tuner.search.families, predict_fit): an uncalibrated family is
launched first at vLLM's defaults with its own settings; one the model describes is calibrated on that launch and
its configurations predicted and launched like the defaults' — with a fake model and fake measurements."""

from __future__ import annotations

from dataclasses import replace

import pytest

from launch.config import ServeConfig
from perfmodel.family import family_of
from perfmodel.rank import Calibration, Check, Prediction
from tests.tuner.test_predict_search import COSTS, truth
from tuner.search.families import CALIBRATES_ATTR, FAMILIES_ATTR, Calibrations, family_launch, launched_family, ranker
from tuner.search.predict_fit import CALIBRATION_ATTR, family_launcher
from tuner.search.predict_model import Model
from tuner.search.predict_queue import Queue
from tuner.search.predict_search import PREDICTED_ATTR, _Search, run_predicted
from tuner.search.space import SpaceContext, suggest_config
from tuner.search.study import enqueue_first, open_study, results_of
from tuner.settings.tune_settings import TuneSettings
from tuner.trial.result import COMPLETE, TrialResult

BASE = ServeConfig(model="/m", load_format="dummy")  # random weights: no speculation in the space
GPU = SpaceContext(base=BASE, min_model_len=1000, model_max_len=4096, is_cpu=False, fp8_kv=True)
FP8_GAIN = 1.5


def served(config: ServeConfig) -> float:
    """The fake server: an fp8 cache serves FP8_GAIN × what the same settings serve with the auto one."""
    auto = 10.0 if replace(config, kv_cache_dtype=None) == BASE else truth(config)
    return auto * (FP8_GAIN if config.kv_cache_dtype == "fp8" else 1.0)


class FamilyModel:
    """Predicts each family exactly once calibrated on it; a configuration of another family is not predicted."""

    def __init__(self) -> None:
        self.fits: list[tuple[str, list[int]]] = []  # (KV dtype, trials fitted) per calibrate call
        self.starts: list[str | None] = []  # the KV dtype of the calibration each call started from

    def calibrate(self, measured, previous):
        fam = family_of(measured[0].config)
        self.fits.append((fam.kv_dtype, [r.number for r in measured]))
        self.starts.append(previous.family.kv_dtype if previous is not None else None)
        checks = previous.checks if previous is not None and previous.family == fam else ()
        return Calibration(fam, COSTS, tuple(r.number for r in measured), 0.0, checks)

    def rank(self, configs, cal):
        preds = [
            Prediction(c, served(c), served(c), cal.demonstrated_error)
            if family_of(c) == cal.family
            else Prediction(c, None, None, None, unseen=f"engine family {family_of(c)} was not calibrated")
            for c in configs
        ]
        return sorted(preds, key=lambda p: (p.capacity_req_s is None, -(p.capacity_req_s or 0.0)))


def run_one(trial, device):
    baseline = bool(trial.user_attrs.get("is_baseline"))
    config = BASE if baseline else launched_family(BASE, trial.user_attrs) or suggest_config(trial, GPU)
    rate = served(config)
    return TrialResult(trial.number, COMPLETE, baseline, config, slo_met=True, goodput_req_s=rate, best_rate=rate)


def tune(path, fake: FamilyModel, trials: int, lines: list[str]):
    settings = TuneSettings(model="/m", gpu="h200", slo="ttft_p95=2s", trials=trials, predict=True, predict_sample=40)
    study = open_study(f"sqlite:///{path}/s.db", resume=True, seed=0)
    enqueue_first(study, [], baseline=True)
    run_predicted(study, settings, GPU, Model(fake.calibrate, fake.rank), run_one, lambda st: None, lines.append)
    return study


def test_an_unseen_family_is_launched_at_the_defaults_then_calibrated_and_its_best_launched(tmp_path):
    fake, lines = FamilyModel(), []
    study = tune(tmp_path, fake, trials=10, lines=lines)
    results = sorted(results_of(study), key=lambda r: r.number)
    first, family, best = results[1].config, results[2].config, results[3].config
    assert first.kv_cache_dtype in (None, "auto")  # the top prediction of the calibrated family first
    assert family == replace(BASE, kv_cache_dtype="fp8")  # then vLLM's defaults with an fp8 cache, nothing else
    assert results[2].extra[PREDICTED_ATTR]["predicted_capacity_req_s"] is None
    attrs = {t.number: t.user_attrs for t in study.trials}
    assert attrs[2][CALIBRATES_ATTR] and not any(CALIBRATES_ATTR in attrs[n] for n in (0, 1, 3))  # measured in full
    assert any(f"trial 2: measured {FP8_GAIN * 10:.3f} req/s; calibrated" in x and "KV fp8 on it" in x for x in lines)
    # its first calibration starts from the auto family's (a KV-dtype sibling: only the KV reads' cost is fitted)
    assert any("(the costs of auto KV but its reads: 1.00 x theirs a byte)" in x for x in lines)
    # calibrated on it, the fp8 family's best predicted beats the best measured: launched as a prediction, checked
    assert best.kv_cache_dtype == "fp8" and best != family
    assert results[3].extra[PREDICTED_ATTR]["predicted_capacity_req_s"] == pytest.approx(served(best))
    assert served(best) > served(first)
    assert len(results) == 4 and any("no more launches" in x for x in lines)
    assert fake.fits == [("auto", [0]), ("auto", [0, 1]), ("fp8", [2]), ("fp8", [2, 3])]
    assert fake.starts == [None, "auto", "auto", "fp8"]
    stored = study.user_attrs[FAMILIES_ATTR]
    assert [d["trials"] for d in stored] == [[2, 3]] and stored[0]["checks"][0]["trial"] == 3
    assert study.user_attrs[CALIBRATION_ATTR]["trials"] == [0, 1]


def test_a_resumed_search_keeps_the_familys_calibration(tmp_path):
    fake, lines = FamilyModel(), []
    tune(tmp_path, fake, trials=3, lines=lines)  # the defaults, the top prediction, the fp8 family's launch
    fake.fits.clear()
    study = tune(tmp_path, fake, trials=10, lines=lines)
    assert fake.fits == [("fp8", [2, 3])]  # no new calibration of either family: the stored ones, refitted once
    assert len(results_of(study)) == 4 and max(results_of(study), key=lambda r: r.number).config.kv_cache_dtype


def test_calibrations_pool_their_checks_and_rank_each_config_by_its_own_family():
    auto = Calibration(family_of(BASE), COSTS, (0,), 0.0, (Check(1, 11.0, 10.0),))
    fp8 = Calibration(family_of(replace(BASE, kv_cache_dtype="fp8")), COSTS, (2,), 0.0, (Check(3, 27.0, 30.0),))
    cals = Calibrations(auto).with_cal(fp8)
    assert cals.of(fp8.family) == fp8 and cals.with_cal(fp8).others == (fp8,)
    assert cals.demonstrated_error == pytest.approx(0.1)  # the median of 10 % and 10 %
    assert Calibrations(auto).demonstrated_error == pytest.approx(0.1)
    configs = [BASE, replace(BASE, kv_cache_dtype="fp8"), replace(BASE, speculative_method="ngram")]
    ranked = ranker(FamilyModel().rank, cals)(configs)
    assert [p.config for p in ranked] == [configs[1], configs[0], configs[2]]  # 15 > 10, the unpredicted last
    assert [p.demonstrated_error for p in ranked[:2]] == [pytest.approx(0.1)] * 2 and ranked[2].unseen


def test_the_familys_own_pick_stays_where_the_kv_budget_drops_its_defaults():
    member = Prediction(replace(BASE, kv_cache_dtype="fp8", max_num_seqs=64), None, None, None, unseen="not calibrated")
    queue = Queue((), (member,))
    cal = Calibrations(FamilyModel().calibrate([TrialResult(0, COMPLETE, True, BASE)], None))
    dropped = Model(lambda m, p: cal.main, lambda configs, c: [])
    assert queue.launching(family_launcher(dropped, cal, BASE)).unseen == (member,)
    kept = Model(lambda m, p: cal.main, FamilyModel().rank)
    (launch,) = queue.launching(family_launcher(kept, cal, BASE)).unseen
    assert launch.config == family_launch(BASE, member.config) == replace(BASE, kv_cache_dtype="fp8")


def test_a_familys_launch_whose_calibration_was_not_stored_is_calibrated_on_resume(tmp_path):
    fake, lines = FamilyModel(), []
    study = tune(tmp_path, fake, trials=3, lines=lines)
    study.set_user_attr(FAMILIES_ATTR, [])  # as if the call had stopped between the launch and storing its fit
    fake.fits.clear()
    fake.starts.clear()
    study = tune(tmp_path, fake, trials=10, lines=lines)
    assert fake.fits == [("fp8", [2]), ("fp8", [2, 3])]  # calibrated on its launch again, then the launch it chose
    assert fake.starts == ["auto", "fp8"]  # again from its KV-dtype sibling's calibration
    last = max(results_of(study), key=lambda r: r.number)
    assert last.number == 3 and last.config.kv_cache_dtype == "fp8" and last.predicted.capacity_req_s


def test_a_familys_refinement_queues_its_neighbours_in_other_calibrated_families():
    """H200 run g: refined around the fp8 family's best, its auto-KV twin was predicted above the best measured, then
    left out of the queue, and the search stopped on a lower 'best prediction left'."""
    fp8, fp8_small = replace(BASE, kv_cache_dtype="fp8"), replace(BASE, kv_cache_dtype="fp8", max_num_seqs=64)
    twin = replace(BASE, max_num_seqs=512)  # the auto KV cache: the defaults' family, calibrated
    fake = FamilyModel()
    cals = Calibrations(fake.calibrate([TrialResult(0, COMPLETE, True, BASE)], None))
    cals = cals.with_cal(fake.calibrate([TrialResult(2, COMPLETE, False, fp8)], None))

    def widen(rank, ranked, known):
        return [*rank([twin]), *ranked], {**known, twin: {}}

    lines: list[str] = []
    state = _Search(Model(fake.calibrate, fake.rank), cals, {}, {fp8: {}, fp8_small: {}}, widen, lines.append)
    state._add_family(family_of(fp8), launched={BASE, fp8})
    assert [p.config for p in state.queue.predicted] == [twin, fp8_small]  # best first; the launched one not again
    assert state.queue.predicted[0].capacity_req_s == served(twin) > served(fp8_small)
    assert f"1 one knob away in other families, the best {served(twin):.3f} req/s" in lines[-1]
