"""bench/perfmodel_studies.py's plans are the capacity searches the committed studies ran: with each trial's
recorded outcomes as the oracle, perfmodel.protocol asks for exactly the recorded levels, and the best
level's request count and token totals are those the plan and the found seed give."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from perfmodel_studies import STUDIES, load_seed, trial_results  # noqa: E402

from loadtest.workload import load_workload  # noqa: E402
from perfmodel.observed import observe  # noqa: E402
from perfmodel.protocol import run_search  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402


def running(study, result, workload) -> int:
    """What the tuner's running_capacity gave the probe: max_num_seqs, or the longest requests that fit."""
    seqs = result.budget.max_num_seqs
    longest = workload.max_input_tokens + workload.max_output_tokens
    return max(1, min(seqs, result.readback.kv_cache_size_tokens // longest))


@pytest.mark.parametrize("study", STUDIES, ids=lambda s: s.folder)
def test_the_plan_replays_every_recorded_search(study):
    workload = load_workload(study.workload)
    results = trial_results(study)
    assert results
    for r in results:
        levels = iter(r.levels)

        def probe(conc, n, levels=levels):
            d = next(levels)
            assert (d.kind, d.concurrency) == ("probe", conc)
            return d.throughput_req_s

        def level(rate, n, may_abandon, levels=levels, number=r.number):
            d = next(levels)
            assert d.rate == pytest.approx(rate, rel=1e-9), f"trial {number}"
            return d.slo_met

        trace = run_search(study.plan, running(study, r, workload), probe, level)
        assert next(levels, None) is None, f"trial {r.number}: recorded levels left over"
        assert trace.best_rate == r.best_rate
        rep = r.report
        if r.best_rate is not None:
            assert rep.requests_ok + rep.requests_failed == study.plan.level_requests(r.best_rate)
        obs = observe(r, Demand(workload, ()), study.plan, load_seed(workload, r))
        assert [lv.rate for lv in obs.levels] == [d.rate for d in r.levels]
