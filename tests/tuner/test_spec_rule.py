"""The speculation rule (tuner.certify.spec_rule): a speculating winner is kept only when its measured acceptance
is above 0 and its capacity (certified where both were soaked) beats the same configuration without speculation."""

from __future__ import annotations

import json
from html import unescape

import pytest

from launch.config import ServeConfig
from loadtest.dist import Dist
from loadtest.server_metrics import ServerSummary
from loadtest.summary import ReportSummary
from tuner.certify.certification import Certification, Soak
from tuner.certify.certified import rate_to_beat
from tuner.certify.headline import headline
from tuner.certify.spec_rule import apply_rule, find_twin, twin_of
from tuner.certify.spec_rule import verdict as judge_speculation
from tuner.report.outputs import summarize, write_outputs
from tuner.report.report_html import write_report
from tuner.trial.result import COMPLETE, TrialResult

PLAIN = ServeConfig(model="/m", max_num_seqs=16)
NGRAM = ServeConfig(model="/m", max_num_seqs=16, speculative_method="ngram", num_speculative_tokens=3)


def trial(n: int, config: ServeConfig, goodput: float, acceptance: float | None = None, base: bool = False):
    server = {} if acceptance is None else {"spec_decode_drafts": 100, "spec_decode_acceptance_rate": acceptance}
    return TrialResult(n, COMPLETE, base, config, slo_met=True, goodput_req_s=goodput, best_rate=goodput,
                       report=ReportSummary(server=ServerSummary(**server), ttft_ms=Dist(p95=500.0)))  # fmt: skip


def cert(n: int, rate: float, acceptance: float | None = None) -> Certification:
    server = {} if acceptance is None else {"spec_decode_drafts": 50, "spec_decode_acceptance_rate": acceptance}
    report = ReportSummary(server=ServerSummary(**server))
    soak = Soak(rate, 30.0, True, (), rate, 10 * rate, rate, {"ttft_p95": 900.0}, {}, report)
    return Certification(n, rate, 30.0, (soak,))


def test_twin_is_the_same_configuration_without_speculation() -> None:
    assert twin_of(NGRAM) == PLAIN
    results = [trial(0, ServeConfig(model="/m"), 1.0, base=True), trial(1, NGRAM, 3.0, 0.6), trial(2, PLAIN, 2.0)]
    assert find_twin(results[1], results).number == 2


@pytest.mark.parametrize(
    ("spec_rate", "acceptance", "kept"),
    [(3.0, 0.6, True), (1.5, 0.6, False), (3.0, 0.0, False)],  # pays; slower than its twin; nothing accepted
)
def test_speculation_is_kept_only_when_acceptance_and_certified_goodput_both_beat_the_twin(
    spec_rate: float, acceptance: float, kept: bool
) -> None:
    # the search flattered speculation (4.0 vs 2.0): the certified rates decide
    results = [trial(0, ServeConfig(model="/m"), 1.0, base=True), trial(1, NGRAM, 4.0, 0.5), trial(2, PLAIN, 2.0)]
    certs = {1: cert(1, spec_rate, acceptance), 2: cert(2, 2.0), 0: cert(0, 1.0)}
    summary, verdict = apply_rule(summarize(results), results, certs)
    assert verdict is not None and verdict.kept is kept and verdict.basis == "certified"
    assert verdict.acceptance == acceptance and verdict.twin_trial == 2
    assert summary.best.number == (1 if kept else 2)
    assert ("kept" if kept else "dropped") in verdict.line and f"{spec_rate:.3f} vs 2.000" in verdict.line
    head = headline(summary, certs, None)
    assert head.certified_req_s == (spec_rate if kept else 2.0)


def test_the_verdict_says_which_window_its_acceptance_was_counted_in() -> None:
    # trials.csv holds the search's best level (50 %); the certifying soak counted other drafts (30 %)
    results = [trial(0, ServeConfig(model="/m"), 1.0, base=True), trial(1, NGRAM, 3.0, 0.5), trial(2, PLAIN, 2.0)]
    soaked = judge_speculation(results[1], results[2], {1: cert(1, 3.0, 0.3), 2: cert(2, 2.0)})
    assert soaked.acceptance == 0.3 and "30.0% in its certifying soak" in soaked.line
    searched = judge_speculation(results[1], results[2], {})
    assert searched.acceptance == 0.5 and "50.0% at its best search level (trials.csv)" in searched.line


def test_a_twin_that_holds_the_rate_to_beat_ties_and_speculation_is_dropped() -> None:
    # both soaks held at their search estimates (1.012 vs 0.961): the twin's first soak runs at 1.012
    results = [trial(0, ServeConfig(model="/m"), 0.7, base=True), trial(1, NGRAM, 1.012, 0.1), trial(2, PLAIN, 0.961)]
    assert rate_to_beat(cert(1, 1.012, 0.09), results[2]) == 1.012
    assert rate_to_beat(cert(1, 0.9, 0.09), results[2]) is None  # below the twin's own estimate: from there
    assert rate_to_beat(None, results[2]) is None
    certs = {1: cert(1, 1.012, 0.09), 2: cert(2, 1.012), 0: cert(0, 0.7)}
    summary, judged = apply_rule(summarize(results), results, certs)
    assert judged is not None and not judged.kept and summary.best.number == 2
    assert "1.012 vs 1.012" in judged.line


def test_without_a_measured_twin_nothing_is_judged_and_nothing_swapped() -> None:
    results = [trial(0, ServeConfig(model="/m"), 1.0, base=True), trial(1, NGRAM, 3.0, 0.6)]
    summary, verdict = apply_rule(summarize(results), results, {})
    assert summary.best.number == 1 and verdict is not None and not verdict.kept and "not judged" in verdict.line


def test_a_best_without_speculation_has_no_verdict() -> None:
    results = [trial(0, ServeConfig(model="/m"), 1.0, base=True), trial(2, PLAIN, 2.0)]
    assert apply_rule(summarize(results), results, {})[1] is None


def test_outputs_state_the_verdict_and_launch_the_kept_configuration(tmp_path) -> None:
    results = [trial(0, ServeConfig(model="/m"), 1.0, base=True), trial(1, NGRAM, 4.0, 0.0), trial(2, PLAIN, 2.0)]
    certs = {1: cert(1, 2.5, 0.0), 2: cert(2, 2.0), 0: cert(0, 1.0)}
    launched = []

    def script(path, best, head):
        launched.append(best.config)

    summary = write_outputs(tmp_path, results, {"slo": "ttft_p95=2s"}, script, write_report, certifications=certs)
    assert summary.best.number == 2 and launched == [PLAIN]  # nothing accepted: the twin is launched
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["speculation"]["kept"] is False and best["best"]["trial"] == 2
    report = unescape((tmp_path / "report.html").read_text())
    assert "Speculative decoding" in report and best["speculation"]["line"] in report
    assert "spec_acceptance_rate" in (tmp_path / "trials.csv").read_text().splitlines()[0]


def test_speculation_that_lost_in_the_search_is_explained_in_best_json_and_the_report(tmp_path) -> None:
    results = [trial(0, ServeConfig(model="/m"), 1.654, base=True), trial(1, NGRAM, 1.2, 0.09)]
    write_outputs(tmp_path, results, {"slo": "ttft_p95=2s"}, lambda *a, **k: None, write_report)
    line = json.loads((tmp_path / "best.json").read_text())["speculation_lost"]
    assert line == (
        "Speculation was measured and lost in the search: trial 1 (ngram, k=3): acceptance 9.0%, 1.200 req/s in the "
        "search; the best, trial 0, does not speculate (1.654 req/s in the search)"
    )
    assert line in unescape((tmp_path / "report.html").read_text())
    # no speculating trial: nothing to explain
    write_outputs(tmp_path, results[:1], {"slo": "ttft_p95=2s"}, lambda *a, **k: None, write_report)
    assert "speculation_lost" not in json.loads((tmp_path / "best.json").read_text())


def test_a_speculating_best_its_twin_outcertified_is_dropped_by_the_rule_on_both_certified_rates(tmp_path) -> None:
    # SmolLM2 on edit-greedy, 120-s soaks (results/cpu-spec-greedy-120s-smollm2-2026-12-07): ngram won the search,
    # 3.313 against its twin's 3.110, then certified 2.683 against the twin's 2.799; the twin overruled it
    results = [trial(0, ServeConfig(model="/m"), 2.486, base=True), trial(1, NGRAM, 3.313, 0.964),
               trial(2, PLAIN, 3.110)]  # fmt: skip
    certs = {0: cert(0, 2.683), 1: cert(1, 2.683, 0.96), 2: cert(2, 2.799)}
    summary = write_outputs(tmp_path, results, {"slo": "ttft_p95=2s"}, lambda *a, **k: None, write_report,
                            certifications=certs)  # fmt: skip
    best = json.loads((tmp_path / "best.json").read_text())
    assert summary.best.number == 2 and summary.overruled.number == 1 and "speculation_lost" not in best
    rule = best["speculation"]
    assert rule["kept"] is False and rule["basis"] == "certified" and (rule["trial"], rule["twin_trial"]) == (1, 2)
    assert "2.683 vs 2.799 req/s without it (trial 2, certified)" in rule["line"]
    assert rule["line"] in unescape((tmp_path / "report.html").read_text())


def test_speculation_certified_below_another_best_says_it_lost_in_certification(tmp_path) -> None:
    other = ServeConfig(model="/m", max_num_seqs=64)  # not the speculating trial's twin
    results = [trial(0, ServeConfig(model="/m"), 2.486, base=True), trial(1, NGRAM, 3.313, 0.964),
               trial(2, other, 3.110)]  # fmt: skip
    certs = {0: cert(0, 2.683), 1: cert(1, 2.683, 0.96), 2: cert(2, 2.799)}
    write_outputs(tmp_path, results, {"slo": "ttft_p95=2s"}, lambda *a, **k: None, write_report, certifications=certs)
    assert json.loads((tmp_path / "best.json").read_text())["speculation_lost"] == (
        "Speculation was measured and lost in certification: trial 1 (ngram, k=3): acceptance 96.4%, 3.313 req/s in "
        "the search, 2.683 certified; the best, trial 2, does not speculate (3.110 req/s in the search, "
        "2.799 certified)"
    )
