import json
from dataclasses import replace

import pandas as pd

from launch.config import ServeConfig
from launch.readback import ReadBack
from loadtest.dist import Dist
from loadtest.server_metrics import ServerSummary
from loadtest.summary import ReportSummary
from tests.records import kv_budget
from tuner.report.outputs import summarize, write_outputs
from tuner.report.report_html import write_report
from tuner.trial.level import Level
from tuner.trial.result import COMPLETE, FAIL, PRUNED, TrialResult

CONTRACT = [
    "number",
    "state",
    "is_baseline",
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "goodput_req_s",
    "ttft_p95_ms",
    "tpot_p95_ms",
    "slo_met",
    "fail_reason",
    "kv_tokens_predicted",
    "kv_tokens_reported",
]


def result(n, state=COMPLETE, met=True, goodput=1.0, baseline=False, rate=None, **cfg):
    rep = ReportSummary(ttft_ms=Dist(p95=100.0 * (n + 1)), tpot_ms=Dist(p95=10.0), throughput_tok_s=50.0)
    levels = (
        Level("rate", 1.0, None, True, 1.0, 1.0, ttft_p95_ms=90.0, tpot_p95_ms=9.0),
        Level("rate", 2.0, None, True, 2.0, 2.0, ttft_p95_ms=150.0, tpot_p95_ms=11.0),
    )
    return TrialResult(
        n,
        state,
        baseline,
        ServeConfig(model="/m", **cfg),
        slo_met=met and state == COMPLETE,
        goodput_req_s=goodput if met else 0.0,
        best_rate=(rate or goodput) if met else None,
        report=rep if state == COMPLETE else None,
        levels=levels if state == COMPLETE else (),
        budget=kv_budget(kv_tokens=1000),
        readback=ReadBack(kv_cache_size_tokens=1010),
        fail_reason=None if state == COMPLETE else "oom: CUDA out of memory",
        constraint=-0.1,
    )


def fake_script(path, best, headline=None):
    path.write_text(f"#!/bin/bash\n# trial {best.number}\n")


def test_files_and_contract_columns(tmp_path):
    results = [
        result(0, goodput=2.0, baseline=True),
        result(1, goodput=3.0, max_num_seqs=64),
        result(2, state=FAIL),
        result(3, state=PRUNED),
    ]
    s = write_outputs(tmp_path, results, {"slo": "ttft_p95=2s"}, fake_script, write_report)
    assert s.best.number == 1 and abs(s.gain_over_baseline - 0.5) < 1e-9
    frame = pd.read_csv(tmp_path / "trials.csv")
    assert all(c in frame.columns for c in CONTRACT)
    assert list(frame["state"]) == ["COMPLETE", "COMPLETE", "FAIL", "PRUNED"]
    assert frame.loc[1, "max_num_seqs"] == 64 and frame.loc[0, "kv_tokens_reported"] == 1010
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["slo_met"] and best["best"]["trial"] == 1 and best["baseline"]["trial"] == 0
    assert "trial 1" in (tmp_path / "launch.sh").read_text()
    html = (tmp_path / "report.html").read_text()
    assert "Trial 1 wins" in html and "+50%" in html and html.count("<svg") >= 3


def test_no_launch_script_for_an_slo_nobody_met(tmp_path):
    (tmp_path / "launch.sh").write_text("stale")
    results = [result(0, met=False, baseline=True), result(1, met=False)]
    s = write_outputs(tmp_path, results, {"slo": "ttft_p95=1ms"}, fake_script, write_report)
    assert s.best is None and len(s.closest) == 2
    assert not (tmp_path / "launch.sh").exists()
    assert json.loads((tmp_path / "best.json").read_text())["slo_met"] is False
    assert "No configuration met" in (tmp_path / "report.html").read_text()


def test_baseline_that_did_not_start_is_said_plainly():
    s = summarize([result(0, state=FAIL, baseline=True), result(1, goodput=2.0)])
    assert s.gain_over_baseline is None and "did not run" in s.baseline_note


def test_trial_result_round_trips():
    r = result(4, max_num_seqs=8)
    assert TrialResult.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_speculation_columns_come_from_the_servers_counters(tmp_path):
    spec = result(1, goodput=3.0, speculative_method="ngram", num_speculative_tokens=4)
    spec = replace(
        spec, report=replace(spec.report, server=ServerSummary(spec_decode_drafts=0))
    )  # the ngram drafter found nothing to propose
    hit = result(2, goodput=2.5, speculative_method="ngram", num_speculative_tokens=2)
    hit = replace(
        hit,
        report=replace(hit.report, server=ServerSummary(spec_decode_drafts=40, spec_decode_acceptance_rate=0.625)),
    )
    write_outputs(tmp_path, [result(0, baseline=True), spec, hit], {"slo": "ttft_p95=2s"}, fake_script, write_report)
    frame = pd.read_csv(tmp_path / "trials.csv")
    assert pd.isna(frame.loc[0, "spec_drafts"]) and pd.isna(frame.loc[0, "spec_acceptance_rate"])
    assert frame.loc[1, "spec_drafts"] == 0 and pd.isna(frame.loc[1, "spec_acceptance_rate"])
    assert frame.loc[2, "spec_drafts"] == 40 and frame.loc[2, "spec_acceptance_rate"] == 0.625


def test_the_highest_rate_that_kept_the_slos_ranks_not_goodput(tmp_path):
    # as in a CPU study: the defaults held 32.11 req/s but read 27.65 goodput (a longer drain); trial 1 held
    # 28.58 and read 27.88. Ranked on goodput, trial 1 would win and the headline would state its lower rate.
    results = [
        result(0, goodput=27.65, rate=32.11, baseline=True),
        result(1, goodput=27.88, rate=28.58, max_num_seqs=64),
    ]
    s = write_outputs(tmp_path, results, {"slo": "x"}, fake_script, write_report)
    assert s.best.number == 0 and s.best_capacities == (32.11,) and s.best_goodputs == (27.65,)
    doc = json.loads((tmp_path / "best.json").read_text())
    assert doc["headline"]["best_trial"] == 0 and doc["headline"]["rate_req_s"] == 32.11
    assert "vLLM's defaults were the best configuration tried" in doc["headline"]["line"]
    # the other way round, the gain is one of capacities: 32.11 / 28.58 - 1 = +12 %
    results = [
        result(0, goodput=27.88, rate=28.58, baseline=True),
        result(1, goodput=27.65, rate=32.11, max_num_seqs=64),
    ]
    s = summarize(results)
    assert s.best.number == 1 and abs(s.gain_over_baseline - (32.11 / 28.58 - 1)) < 1e-9


def test_a_configuration_measured_twice_is_judged_on_its_mean(tmp_path):
    # trial 2's configuration was proposed again (trial 3) and measured far lower: its mean, 2.5, loses to
    # trial 1's 3.0, where the luckier single measurement (4.0) would have won
    results = [
        result(0, goodput=2.0, baseline=True),
        result(1, goodput=3.0, max_num_seqs=64),
        result(2, goodput=4.0, max_num_seqs=8),
        result(3, goodput=1.0, max_num_seqs=8),
    ]
    s = summarize(results)
    assert s.best.number == 1 and s.best_capacities == (3.0,) and abs(s.gain_over_baseline - 0.5) < 1e-9
    assert [r.number for r in s.top] == [1, 3, 0]  # one trial per configuration: the one nearest its mean
    # a repeat that missed the SLO at every load counts as 0
    s = summarize(results[:2] + [result(2, goodput=3.6, max_num_seqs=8), result(3, met=False, max_num_seqs=8)])
    assert [r.number for r in s.top] == [1, 0, 2]  # 3.0, 2.0, then (3.6 + 0) / 2
    # the best's own repeats: the gain and the text use the mean
    s = write_outputs(
        tmp_path, results[:2] + [result(2, goodput=3.4, max_num_seqs=64)], {"slo": "x"}, fake_script, write_report
    )
    assert s.best.number == 2 and s.best_capacities == (3.0, 3.4) and abs(s.gain_over_baseline - 0.6) < 1e-9
    assert s.best_capacity_text() == "3.200 req/s (mean of 2 measurements: 3.000, 3.400)"
    doc = json.loads((tmp_path / "best.json").read_text())
    assert doc["best_capacities_req_s"] == [3.0, 3.4] and abs(doc["best_capacity_mean_req_s"] - 3.2) < 1e-9
    assert doc["best_goodputs_req_s"] == [3.0, 3.4] and abs(doc["best_goodput_mean_req_s"] - 3.2) < 1e-9
    assert "mean of 2 measurements" in (tmp_path / "report.html").read_text()
