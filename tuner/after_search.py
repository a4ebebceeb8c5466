"""The steps after the search, each on fresh servers and each kept in the study (a resume reuses them):
``--confirm N`` re-measures the best against its rival (tuner.certify.confirm), certification soaks the best and
vLLM's defaults (tuner.certify.certified; a speculating winner's twin without speculation too: tuner.certify.spec_rule),
the model's spare speed of the stated rate (tuner.certify.spare_speed, with --predict), and the demo's sample answer
asks the winner one question (tuner.report.sample_answer). Every step runs through
the run's scheduler and rules: its placement, its Ctrl-C, never its time budget."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence

from launch.config import ServeConfig
from perfmodel.rank import Calibration
from tuner.certify.certification import Certification, KeepSoaks, Soak
from tuner.certify.certified import (
    CertifyOne,
    certify_study,
    config_levels,
    floor_rate,
    keep_gain_check,
    rate_to_beat,
    stored,
)
from tuner.certify.challenger import challenge_line, challenge_rate, challenger
from tuner.certify.confirm import confirm, confirm_trial_number, rival_of
from tuner.certify.confirm_store import STUDY_ATTR, current_confirmation, stored_run
from tuner.certify.gain_check import GainCheck, pending
from tuner.certify.soak import certify_config, fresh_server, run_soak, window_hint
from tuner.certify.spec_rule import find_twin, speculates, twin_of
from tuner.certify.summary import Summary
from tuner.report.sample_answer import STUDY_ATTR as SAMPLE_ATTR
from tuner.report.sample_answer import sample_answer
from tuner.search.predict_model import perf_model
from tuner.search.predict_spare import STUDY_ATTR as SPARE_ATTR
from tuner.search.predict_spare import keep_fit, kept_fit, spare_speed_of
from tuner.search.space import params_of
from tuner.search.study import finished, results_of, run_study
from tuner.study_outputs import stored_runs
from tuner.trial.kv_pin import kv_mismatch, pin_note
from tuner.trial.result import TrialResult
from tuner.trial.runner import run_trial
from tuner.tune_setup import TuneRun


def confirm_best(r: TuneRun, summary: Summary) -> Summary:
    """With --confirm N: N fresh measurements each of the best and its rival, added to the study's."""
    rounds = r.inp.settings.confirm
    rival = rival_of(summary)
    if not rounds:
        return summary
    if summary.best is None or rival is None:
        r.progress.say("--confirm: nothing to confirm (fewer than two configurations to compare)")
        return summary
    earlier = current_confirmation(stored_runs(r.study), summary)
    full = r.tctx.uncut()  # re-measurements are never cut short, and come after the search's time budget

    def measure(k: int, config: ServeConfig, device: str | None) -> TrialResult:
        say = functools.partial(r.progress.say, trial=f"confirm {k}")
        with full.rules.placed(config.gpus, device) as where:
            return run_trial(confirm_trial_number(k), config, False, full, say, device=where)

    devices = r.inp.settings.device_list()
    done = len(earlier.best_req_s) if earlier else 0
    fresh = confirm(summary.best, rival, rounds, measure, r.progress.say, devices, done, r.scheduler)
    r.progress.say(fresh.line())
    # kept in the study, so that a resumed study adds to it instead of losing it
    run = stored_run(fresh, r.inp.settings.devices, dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    r.study.set_user_attr(STUDY_ATTR, [*stored_runs(r.study), run])
    return r.outputs.write(r.study)


def certify_best(r: TuneRun, summary: Summary) -> Summary:
    """Certify the best and vLLM's defaults by soaks on fresh servers (and a speculating best's twin)."""
    soak_s, whom = r.tctx.plan.soak_s, r.inp.settings.certify
    if soak_s <= 0 or summary.best is None:
        return summary
    full = r.tctx.uncut()  # soaks are never cut short
    device = r.inp.settings.device_list()[0]
    earlier = stored(r.study)  # certifications made by an earlier call (a soak beside them is not beside in time)
    floors: dict[int, float] = {}  # a challenger steps down no further than the rate it must hold to win

    def certify_one(t: TrialResult, first: float | None, prior: tuple[Soak, ...], keep: KeepSoaks) -> Certification:
        say = functools.partial(r.progress.say, trial=f"certify {t.number}")
        config = r.outputs.deployed(t)  # the trial's KV blocks, every start
        if (note := pin_note(t.config, config, t.readback)) is not None:
            say(note)
        floor = max(floor_rate(t), floors.get(t.number, 0.0))
        with full.rules.placed(t.config.gpus, device) as where:
            cert = certify_config(t.number, config, full, t.best_rate or 0.0, floor, say, where, first,
                                  prior, keep, config_levels(summary, t))  # fmt: skip
        say(cert.line())
        if (hint := window_hint(cert)) is not None:
            say(hint)
        trial_tokens = t.readback.kv_cache_size_tokens if t.readback else None
        if (odd := kv_mismatch(trial_tokens, [s.report.server.kv_cache_tokens for s in cert.soaks])) is not None:
            say(odd)
        return cert

    certify_study(r.study, summary, soak_s, certify_one, whom)
    summary = r.outputs.write(r.study)
    twin = _speculation_twin(r, summary, device)
    if twin is not None:  # the rule compares like with like: the twin is certified too, from the rate to beat
        first = rate_to_beat(stored(r.study).get(summary.best.number) if summary.best else None, twin)
        if first is not None:
            r.progress.say(f"trial {twin.number} (no speculation) soaks first at {first:.3f} req/s, the rate to beat")
        rates = {twin.number: first} if first is not None else {}
        certify_study(r.study, summary, soak_s, certify_one, whom, also=(twin,), first=rates)
        summary = r.outputs.write(r.study)
    if whom == "all":
        summary = _certify_challenger(r, summary, soak_s, certify_one, floors)
    return soak_beside(r, summary, device, earlier)


def _certify_challenger(
    r: TuneRun, summary: Summary, soak_s: float, certify_one: CertifyOne, floors: dict[int, float]
) -> Summary:
    """A configuration the search measured above the best's certified rate, never soaked, certified too, from its
    estimate down to the rate it must hold to win (tuner.certify.challenger); the summary after it."""
    certs = stored(r.study)
    rival = challenger(summary, certs)
    if rival is None or summary.best is None:
        return summary
    best_rate = certs[summary.best.number].certified_rate or 0.0
    floors[rival.number] = challenge_rate(best_rate)
    r.progress.say(challenge_line(rival, summary.best.number, best_rate))
    certify_study(r.study, summary, soak_s, certify_one, "all", also=(rival,))
    return r.outputs.write(r.study)


def soak_beside(r: TuneRun, summary: Summary, device: str | None, earlier: dict[int, Certification]) -> Summary:
    """Where the best certified above vLLM's defaults: the best soaks once more on a fresh server, right after the
    defaults' certification, at the highest rate they missed, with that soak's load (tuner.certify.gain_check);
    ``earlier``: the certifications an earlier call made (the defaults' among them: the soak is not beside them)."""
    from launch.errors import LaunchFailure

    best, base, certs = summary.best, summary.baseline, stored(r.study)
    if best is None or base is None or best.number == base.number:
        return summary
    cert, base_cert = certs.get(best.number), certs.get(base.number)
    where = pending(cert, base_cert)
    if cert is None or base_cert is None or where is None:
        return summary
    say = functools.partial(r.progress.say, trial=f"certify {best.number}")
    say(f"the gain, soaked beside vLLM's defaults: {where.rate_req_s:.3f} req/s, the highest rate they missed above "
        f"all they held, up to the best's {cert.certified_rate:.3f}; that soak's load, a fresh server")  # fmt: skip
    full = r.tctx.uncut()
    config = r.outputs.deployed(best)  # as launch.sh starts it: the trial's KV blocks pinned
    try:
        with (
            full.rules.placed(best.config.gpus, device) as at,
            fresh_server(config, full, f"beside-{best.number:03d}", say, at) as server,
        ):
            soak = run_soak(server.url, config, full, where.rate_req_s, cert.soak_s, where.attempt)
    except LaunchFailure as exc:
        say(f"the soak beside vLLM's defaults did not run ({exc.reason}: {exc.detail}); the gain stays unchecked")
        return summary
    say(soak.line())
    same_call = earlier.get(base.number) != base_cert
    keep_gain_check(r.study, best.number, GainCheck(base.number, base_cert.certified_rate or 0.0, soak, same_call))
    return r.outputs.write(r.study)


def _speculation_twin(r: TuneRun, summary: Summary, device: str | None) -> TrialResult | None:
    """When the best speculates: its configuration without speculation, measured as one more trial of the
    study where it was not already (tuner.certify.spec_rule); None when the best does not speculate."""
    best = summary.best
    if best is None or not speculates(best):
        return None
    twin = find_twin(best, results_of(r.study))
    if twin is None:
        r.study.enqueue_trial(params_of(twin_of(best.config), r.sctx), user_attrs={"speculation_twin": best.number})
        total = len(finished(r.study)) + 1
        run_study(r.study, total, r.run_one, r.outputs.after_trial, scheduler=r.scheduler.on([device]))
        twin = find_twin(best, results_of(r.study))
    return twin


def spare_best(r: TuneRun, summary: Summary) -> None:
    """Where the best has a stated rate: how much slower a machine may be before that rate tips, by the calibrated
    model below the study's lowest miss above it (tuner.certify.spare_speed), kept and written out. Without
    --predict's calibration the model is fitted here on the best's family (tuner.search.predict_spare)."""
    best = summary.best
    cert = stored(r.study).get(best.number) if best is not None else None
    if best is None or cert is None or cert.certified_rate is None:
        return
    say = functools.partial(r.progress.say, trial=f"certify {best.number}")

    def fit(trials: Sequence[TrialResult]) -> Calibration:
        if (kept := kept_fit(r.study, trials)) is not None:  # a resumed call: fitted on these trials already
            return kept
        numbers = ", ".join(str(t.number) for t in trials)
        say(f"spare speed of trial {best.number}: calibrating the performance model on trials {numbers} (~1 min)")
        cal = perf_model(r.tctx).calibrate(trials, None)
        keep_fit(r.study, trials, cal)
        return cal

    found = spare_speed_of(r.study, r.tctx, best, cert, config_levels(summary, best), fit)
    if isinstance(found, str):
        say(found)
        return
    say(found.line())
    r.study.set_user_attr(SPARE_ATTR, found.to_dict())
    r.outputs.write(r.study)


def sample_best(r: TuneRun, best: TrialResult, question: str) -> None:
    """The winner's answer to ``question`` on a fresh server, kept in the study and written out."""
    say = functools.partial(r.progress.say, trial=f"sample {best.number}")
    with r.tctx.rules.placed(best.config.gpus, r.inp.settings.device_list()[0]) as where:
        answer = sample_answer(best, r.tctx, say, question, where)
    r.study.set_user_attr(SAMPLE_ATTR, answer.to_dict())
    r.outputs.write(r.study)
