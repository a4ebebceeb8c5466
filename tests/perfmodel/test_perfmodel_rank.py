"""perfmodel.rank: what the search will call. Unseen engine families (another KV dtype among them) are
flagged, not predicted, unless a KV dtype is extrapolated on request (marked so); the ranking is by predicted
capacity; a calibration fitted to measurements the model itself produced recovers their costs well enough to
rank the same way."""

from __future__ import annotations

import pytest

from launch.config import ServeConfig
from loadtest.dist import Dist
from loadtest.lengths import LengthDist
from loadtest.slo import parse_slos
from loadtest.summary import ReportSummary
from loadtest.workload import Workload, load_workload
from perfmodel.calibrate import fit, loss
from perfmodel.capacity import SteadyState, predict_search
from perfmodel.config import EngineConfig
from perfmodel.costs import Costs
from perfmodel.family import family_of
from perfmodel.observed import ObservedLevel, ObservedTrial
from perfmodel.protocol import ShortLevelSearch
from perfmodel.rank import Calibration, Candidate, Check, calibrate, predict, rank
from perfmodel.traffic import Demand
from tuner.budget.gpu import GPUProfile
from tuner.model.spec import ModelSpec
from tuner.synthetic import shape_config

TRUTH = Costs(0.004, 2e-5, 5e-5, 1e-13, 0.0, 1e-3, 2e-5)
SLOS = parse_slos("ttft_p95=2s,tpot_p95=60ms")
CHAT = Demand(load_workload("chat"), SLOS)
QUICK = SteadyState(duration_s=20.0, settle_s=8.0, rel_tolerance=0.05)
PLAN = ShortLevelSearch(
    probe_requests=32, probe_concurrency=16, level_duration_s=3.0, min_level_requests=16, bisection_steps=2
)
BASE = ServeConfig("/models/m")


def engine(seqs: int, kv_bytes: int = 131072) -> EngineConfig:
    return EngineConfig(seqs, 8192, True, True, 50_000, 16, 4096, kv_bytes)


def calibration(costs: Costs = TRUTH) -> Calibration:
    return Calibration(family_of(BASE), costs, (0,), 0.0)


def test_another_engine_family_is_not_predicted_and_ranks_last():
    spec = Candidate(ServeConfig("/models/m", speculative_method="ngram", num_speculative_tokens=4), engine(64))
    other_weights = Candidate(ServeConfig("/models/m-w4a16"), engine(64))
    plain = Candidate(ServeConfig("/models/m", max_num_seqs=64), engine(64))
    preds = rank([spec, other_weights, plain], calibration(), CHAT, QUICK)
    assert preds[0].config == plain.config and preds[0].capacity_req_s and preds[0].capacity_req_s > 0
    assert [p.capacity_req_s for p in preds[1:]] == [None, None]
    assert "ngram" in (preds[1].unseen or "") + (preds[2].unseen or "")
    assert "m-w4a16" in (preds[1].unseen or "") + (preds[2].unseen or "")


def test_a_kv_dtype_not_calibrated_is_not_predicted_unless_extrapolated_on_request():
    fp8 = Candidate(ServeConfig("/models/m", kv_cache_dtype="fp8"), engine(64, kv_bytes=65536))
    p = predict(fp8, calibration(), CHAT, QUICK)
    assert p.capacity_req_s is None and "KV fp8 was not calibrated" in (p.unseen or "")
    e = predict(fp8, calibration(), CHAT, QUICK, extrapolate_kv=True)
    assert e.capacity_req_s and e.unseen is None and "fp8" in (e.extrapolated or "")
    # only the KV dtype is carried over: other weights stay unseen even on request
    other = Candidate(ServeConfig("/models/m-w4a16", kv_cache_dtype="fp8"), engine(64, kv_bytes=65536))
    assert predict(other, calibration(), CHAT, QUICK, extrapolate_kv=True).capacity_req_s is None


def test_another_kv_dtype_ranks_first_of_the_unseen_by_its_bytes_scaled_prediction():
    spec = Candidate(ServeConfig("/models/m", speculative_method="ngram", num_speculative_tokens=4), engine(64))
    few, many = (Candidate(ServeConfig("/models/m", kv_cache_dtype="fp8", max_num_seqs=s), engine(s, 65536))
                 for s in (4, 256))  # fmt: skip
    plain = Candidate(ServeConfig("/models/m", max_num_seqs=64), engine(64))
    preds = rank([spec, few, plain, many], calibration(), CHAT, QUICK)
    assert [p.config for p in preds] == [plain.config, many.config, few.config, spec.config]
    assert [p.capacity_req_s is None for p in preds] == [False, True, True, True]
    assert "it ranks the family's launch" in (preds[1].unseen or "") and "ngram" in (preds[3].unseen or "")


def test_a_calibration_stored_before_the_kv_dtype_was_in_the_family_reads_back_as_its_dtype():
    old = {"family": {"model": "m", "speculative": "off", "tensor_parallel": 1}, "kv_dtypes": ["auto"],
           "costs": TRUTH.to_dict(), "trials": [0], "loss": 0.0}  # fmt: skip
    assert Calibration.from_dict(old).family == family_of(BASE)
    assert Calibration.from_dict(calibration().to_dict()) == calibration()


def test_the_ranking_is_by_predicted_capacity():
    cands = [Candidate(ServeConfig("/models/m", max_num_seqs=s), engine(s)) for s in (4, 256, 32)]
    preds = rank(cands, calibration(), CHAT, QUICK)
    caps = [p.capacity_req_s for p in preds]
    assert caps == sorted(caps, reverse=True)
    assert preds[-1].config.max_num_seqs == 4  # four sequences at once cannot keep up with the others


def test_a_trickle_that_misses_the_slo_has_no_capacity():
    w = Workload("slow", LengthDist("fixed", 100, 100), LengthDist("fixed", 100, 100))
    slow = Costs(0.05, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # 100 tokens × 50 ms = 5 s per request
    p = predict(Candidate(BASE, engine(8)), calibration(slow), Demand(w, parse_slos("e2e_p95=2s")), QUICK)
    assert p.capacity_req_s == 0.0


def test_calibrate_refuses_trials_of_two_families():
    spec = ModelSpec.from_config(shape_config("llama-tiny"))
    trials = [observed_trial(BASE, 0), observed_trial(ServeConfig("/models/m", speculative_method="ngram"), 1)]
    with pytest.raises(ValueError, match="engine family"):
        calibrate(trials, spec, GPUProfile.load("cpu"))


def test_a_calibration_round_trips_and_reports_its_median_error():
    cal = calibration().checked(Check(1, 110.0, 100.0), Check(2, 45.0, 50.0), Check(3, 30.0, 30.0))
    assert cal.demonstrated_error == pytest.approx(0.1)
    assert Calibration.from_dict(cal.to_dict()) == cal


def observed_trial(config: ServeConfig, number: int, costs: Costs = TRUTH, seqs: int = 128) -> ObservedTrial:
    """A trial 'measured' on the model itself: the short-level search's levels as the tuner records them."""
    found = predict_search(engine(seqs), costs, CHAT, PLAN, seed=number)
    levels = tuple(
        ObservedLevel(
            s.kind,
            s.rate,
            s.concurrency,
            s.requests,
            s.slo_met,
            o.throughput_req_s,
            o.value("ttft", 95),
            o.value("tpot", 95),
        )
        for s, o in zip(found.trace.steps, found.levels, strict=True)
    )
    steps = zip(found.trace.steps, found.levels, strict=True)
    best = next((o for s, o in steps if s.rate == found.best_rate), None)
    p50s = {f"{m}_ms": Dist(p50=best.value(m, 50)) for m in ("ttft", "tpot", "e2e")} if best else None
    report = ReportSummary(**p50s) if p50s else None
    return ObservedTrial(number, CHAT, config, engine(seqs), number, levels, found.best_rate, 0.0, report)


def test_a_fit_to_the_models_own_measurements_predicts_another_configuration():
    trial = observed_trial(BASE, 0)
    start = Costs(0.01, 1e-5, 1e-5, TRUTH.per_kv_byte_s, 0.0, 3e-3, 1e-5)
    fitted = fit([trial], start, max_evaluations=150)
    assert fitted.loss < loss(start, [trial])[0] / 5
    truth = predict_search(engine(16), TRUTH, CHAT, PLAN, seed=9).best_rate
    ours = predict_search(engine(16), fitted.costs, CHAT, PLAN, seed=9).best_rate
    assert truth and ours == pytest.approx(truth, rel=0.15)


def test_a_prediction_whose_rate_fills_max_num_seqs_says_so():
    # 8 slots fill long before 50,000 KV tokens do; 1,024 never fill at what this engine completes
    capped = predict(Candidate(ServeConfig("/models/m", max_num_seqs=8), engine(8)), calibration(), CHAT, QUICK)
    assert capped.capacity_req_s and "runs all max_num_seqs 8 sequences" in (capped.seq_bound or "")
    wide = predict(Candidate(ServeConfig("/models/m", max_num_seqs=1024), engine(1024)), calibration(), CHAT, QUICK)
    assert wide.capacity_req_s and wide.seq_bound is None


def test_vllms_engine_side_means_are_fitted_where_a_level_kept_them():
    """Each passed level with vLLM's engine-side TTFT (or ITL) adds one residual, log(model / measured)."""
    from dataclasses import replace

    from perfmodel.calibrate import residuals
    from perfmodel.capacity import replay_levels

    trial = observed_trial(BASE, 0)
    outcomes = replay_levels(trial, TRUTH)
    plain = residuals(trial, outcomes)
    passed = [k for k, lv in enumerate(trial.levels) if lv.kind == "probe" or lv.slo_met]
    halved = tuple(
        replace(lv, engine_ttft_ms=2 * o.engine_ttft_ms, engine_itl_ms=o.engine_itl_ms) if k in passed else lv
        for k, (lv, o) in enumerate(zip(trial.levels, outcomes, strict=True))
    )
    fitted = residuals(replace(trial, levels=halved), outcomes)
    assert passed and len(fitted) == len(plain) + 2 * len(passed)
    extra = sorted(fitted)[: len(passed)]  # the engine TTFT terms: the model's is half the 'measured'
    assert extra == pytest.approx([-0.6931] * len(passed), abs=1e-3)
    assert sum(abs(r) for r in fitted) == pytest.approx(sum(abs(r) for r in plain) + 0.6931 * len(passed), abs=1e-3)
