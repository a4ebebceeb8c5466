"""tuner.search.refine: the configurations one knob from the best predicted are predicted too, so a small sample that
misses the model's best region still launches it (a fake model: its truth rewards sequences and batch size)."""

from __future__ import annotations

import optuna
import pytest

from launch.config import ServeConfig
from perfmodel.rank import Prediction
from tests.tuner.test_predict_search import SCTX, FakeModel, run, truth
from tuner.search.predict_model import sample_space
from tuner.search.refine import OTHER_FAMILY, merge, neighbours, refined
from tuner.search.space import suggest_config
from tuner.search.study import results_of

CHUNKING = {"enable_chunked_prefill", "max_num_batched_tokens"}


def changed(a: dict, b: dict) -> set[str]:
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_neighbour_is_one_knob_away_and_launches_as_predicted(seed: int) -> None:
    (config, params), *_ = sample_space(SCTX, 1, seed).items()
    found = neighbours(params, SCTX)
    assert found and config not in found
    for neighbour, p in found.items():
        diff = changed(params, p)
        assert len(diff) == 1 or diff <= CHUNKING, diff  # chunked prefill on brings a batch size, off drops it
        assert not diff & set(OTHER_FAMILY)
        assert suggest_config(optuna.trial.FixedTrial(p), SCTX) == neighbour  # the params launch this config
    seqs = {c.max_num_seqs for c in found} - {config.max_num_seqs}
    assert len(seqs) == 7  # every other max_num_seqs of the space


def test_refinement_climbs_from_a_sample_that_misses_the_best() -> None:
    fake = FakeModel()
    configs = sample_space(SCTX, 3, 0)
    cal = fake.calibrate([], None)
    ranked = fake.rank(list(configs), cal)
    lines: list[str] = []
    out, known = refined(lambda cs: fake.rank(cs, cal), ranked, configs, SCTX, lines.append)
    # two rounds: the best of the sample's top's neighbours, then the best of that one's
    first = max(neighbours(configs[ranked[0].config], SCTX).items(), key=lambda kv: truth(kv[0]))
    second = max([first, *neighbours(first[1], SCTX).items()], key=lambda kv: truth(kv[0]))
    assert out[0].config == second[0] and truth(second[0]) > ranked[0].capacity_req_s
    assert known[out[0].config] == second[1]  # launched through its params
    assert set(configs) <= set(known) and len(out) == len({p.config for p in out})
    assert "one knob from the 2 best of their families" in lines[0] and "top trusted prediction" in lines[0]


def test_a_refined_search_launches_the_better_neighbour_first(tmp_path) -> None:
    study, _, lines = run(tmp_path, FakeModel(), trials=2, sample=3)
    fake = FakeModel()
    sample = sample_space(SCTX, 3, 0)
    best_sampled = max(truth(c) for c in sample if not c.speculative_method)
    launched = max(results_of(study), key=lambda r: r.number)
    assert not launched.is_baseline and truth(launched.config) > best_sampled
    cal = fake.calibrate([], None)
    out, _ = refined(lambda cs: fake.rank(cs, cal), fake.rank(list(sample), cal), sample, SCTX, lambda _m: None)
    assert launched.config == out[0].config  # the refined ranking's top, launched right after the defaults
    assert any("one knob from the" in line for line in lines)


def test_merge_orders_predicted_by_capacity_then_the_unpredicted() -> None:
    def p(cap: float | None, seqs: int) -> Prediction:
        return Prediction(ServeConfig(model="/m", max_num_seqs=seqs), cap, cap, None, unseen=None if cap else "x")

    merged = merge([p(5.0, 1), p(None, 2)], [p(7.0, 3), p(None, 4)])
    assert [m.config.max_num_seqs for m in merged] == [3, 1, 2, 4]
    tied = merge([p(7.0, 1)], [p(7.0, 3)])
    assert [m.config.max_num_seqs for m in tied] == [3, 1]  # a neighbour that only ties does not move ahead
