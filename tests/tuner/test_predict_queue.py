"""tune --predict's queue (tuner.search.predict_queue): what is left to launch, in what order, and when launching
more cannot pay — on hand-made predictions (no model, no study)."""

from __future__ import annotations

from dataclasses import replace

from launch.config import ServeConfig
from perfmodel.rank import Prediction
from tuner.search.predict_queue import REPEATABILITY, Queue, converged

BASE = ServeConfig(model="/m")


def pred(cap, name="m", spec=None):
    return Prediction(
        ServeConfig(model=f"/{name}", max_num_seqs=int(cap * 10), speculative_method=spec), cap, cap, None
    )


def test_converged_needs_a_shown_error_and_a_best_measured():
    left = [pred(11.0)]
    assert converged(None, left, 0.1) is None
    assert converged(10.0, left, None) is None  # no launch has shown the model's error yet
    assert converged(10.0, left, 0.05) is None  # 11 > 10 × 1.05: worth a launch
    assert "within the model's demonstrated error (10.0 %)" in converged(10.0, left, 0.1)
    assert "every predicted configuration" in converged(10.0, [], None)
    assert converged(10.0, left, 0.3) is None  # over TRUSTED_ERROR: the model does not stop the search


def test_a_demonstrated_error_below_a_measurements_repeatability_stops_at_the_repeatability():
    """One check 1.8 % off (H200 run g) does not make a 3 % predicted gain worth a launch: a measurement of one
    configuration repeats within 4-7 % on fresh servers, so no launch could show it."""
    assert REPEATABILITY == 0.05
    why = converged(74.308, [pred(76.457)], 0.018)
    assert why and "(1.8 %; 5 % at least: a measurement repeats no closer)" in why
    assert converged(74.308, [pred(74.308 * 1.06)], 0.018) is None  # over the floor: launched
    assert converged(10.0, [pred(10.4)], 0.0) and converged(10.0, [pred(10.6)], 0.0) is None


def test_queue_order_one_per_unseen_family():
    unseen = [
        Prediction(ServeConfig(model="/m", speculative_method="ngram", max_num_seqs=s), None, None, None, unseen=u)
        for s, u in ((8, "engine family ngram:1 was not calibrated"), (16, "engine family ngram:1 was not calibrated"))
    ]
    q = Queue.of([pred(3.0), pred(2.0), *unseen], launched={pred(3.0).config})
    assert [p.capacity_req_s for p in q.predicted] == [2.0] and len(q.unseen) == 1
    assert q.next(0, None) == q.predicted[0]
    assert q.next(1, "converged") == q.unseen[0]
    assert q.without(q.unseen[0].config).next(1, "converged") is None
    assert q.without(q.unseen[0].config).next(1, None) == q.predicted[0]


def test_queue_launches_one_fp8_kv_configuration_as_its_own_family():
    fp8 = [ServeConfig(model="/m", kv_cache_dtype="fp8", max_num_seqs=s) for s in (128, 512)]
    unseen = [Prediction(c, None, None, None, unseen="engine family m, KV fp8 was not calibrated") for c in fp8]
    q = Queue.of([pred(3.0), *unseen], launched={BASE})
    assert [p.config for p in q.unseen] == [fp8[0]]  # one of the two: the KV dtype is the family's kind
    assert Queue.of([pred(3.0), *unseen], launched={BASE, fp8[1]}).unseen == ()  # one already measured


def test_queue_skips_an_unseen_family_the_study_already_measured():
    ngram = [ServeConfig(model="/m", speculative_method="ngram", num_speculative_tokens=k) for k in (4, 5)]
    unseen = [Prediction(c, None, None, None, unseen="engine family not calibrated") for c in ngram]
    q = Queue.of([pred(3.0), *unseen[:1]], launched={BASE, ngram[1]})  # ngram:5 measured before a --resume
    assert q.unseen == () and q.next(1, None) == q.predicted[0]


def test_queue_measures_the_best_seq_bound_prediction_once_and_never_stops_on_it():
    bound = [replace(pred(c), seq_bound="it runs all max_num_seqs") for c in (9.0, 8.0)]
    q = Queue.of([*bound, pred(3.0), pred(2.0)], launched={BASE})
    assert [p.capacity_req_s for p in q.predicted] == [3.0, 2.0]  # trusted only: the stop rule sees 3.0, not 9.0
    assert [p.capacity_req_s for p in q.unseen] == [9.0]  # the best bound one, once
    assert q.next(0, None) == q.predicted[0] and q.next(1, "converged") == bound[0]
    assert "within" in converged(2.9, q.predicted, 0.1)  # 9.0 left does not keep the search going
    assert q.beating(8.9).unseen == q.unseen and q.beating(9.0).unseen == ()  # an upper bound that cannot win
    again = q.reranked([replace(pred(3.0), seq_bound="now it fills max_num_seqs")])
    assert [p.capacity_req_s for p in again.predicted] == [2.0]  # a refit that finds the cap drops it from trust
