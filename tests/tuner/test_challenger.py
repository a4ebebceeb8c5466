"""tuner.certify.challenger: a configuration the search measured above the best's certified rate, never soaked, is
certified too (run h's fp8 trial: 70.678 estimated beside a winner certified at 59.595), and wins where it certifies
more; none where every such configuration is within a measurement's repeatability, certified, or speculating."""

from __future__ import annotations

from dataclasses import replace

from tests.tuner.test_certify import Attrs, cert_of, trial
from tuner.certify.certified import certify_study, stored
from tuner.certify.challenger import challenge_line, challenge_rate, challenger
from tuner.certify.summary import certified_summary
from tuner.report.outputs import summarize


def fp8(t):
    return replace(t, config=replace(t.config, kv_cache_dtype="fp8"))


def test_the_highest_estimate_above_the_best_certified_rate_and_five_percent_is_the_challenger():
    base, best, near, far = (
        trial(0, 60.0, baseline=True),
        trial(1, 70.9, seqs=512),
        trial(2, 62.0, seqs=64),
        trial(3, 70.7),
    )
    far = fp8(far)
    summary = summarize([base, best, near, far])
    certs = {0: cert_of(base, 57.0), 1: cert_of(best, 59.6)}
    assert challenge_rate(59.6) == 59.6 * 1.05
    assert challenger(summary, certs).number == 3  # 62.0 is under 59.6 x 1.05 = 62.58
    assert challenge_line(far, 1, 59.6) == (
        "trial 3 measured 70.700 req/s in the search, above the certified 59.600 of trial 1, and was never soaked: "
        "certified too, from its estimate down to 62.580 (5 % more: what it must hold to win)"
    )
    assert challenger(summary, {**certs, 3: cert_of(far, 61.0)}) is None  # certified already
    assert challenger(summary, {0: certs[0]}) is None  # the best not certified: nothing to challenge
    assert challenger(summarize([base, best, near]), certs) is None
    spec = replace(far, config=replace(far.config, speculative_method="ngram", num_speculative_tokens=3))
    assert challenger(summarize([base, best, spec]), certs) is None  # the twin rule judges speculation


def test_a_configuration_measured_twice_is_judged_on_its_mean():
    base, best = trial(0, 60.0, baseline=True), trial(1, 70.9, seqs=512)
    lucky, unlucky = fp8(trial(2, 70.7)), fp8(trial(4, 52.0))  # one configuration: mean 61.35 < 62.58
    certs = {0: cert_of(base, 57.0), 1: cert_of(best, 59.6)}
    assert challenger(summarize([base, best, lucky, unlucky]), certs) is None
    assert challenger(summarize([base, best, lucky]), certs).number == 2


def test_a_challenger_that_certifies_more_becomes_the_best_and_one_that_does_not_leaves_it():
    base, best, rival = trial(0, 60.0, baseline=True), trial(1, 70.9, seqs=512), fp8(trial(2, 70.7))
    summary = summarize([base, best, rival])
    for held, winner in ((66.0, 2), (None, 1)):
        study = Attrs()
        study.user_attrs["certifications"] = [cert_of(base, 57.0).to_dict(), cert_of(best, 59.6).to_dict()]
        certify_study(study, summary, 30.0, lambda t, first, prior, keep, h=held: cert_of(t, h), also=(rival,))
        certs = stored(study)
        assert certs[2].certified_rate == held
        after = certified_summary(summary, certs)
        assert after.best.number == winner and (after.overruled is not None) == (winner == 2)
        assert challenger(after, certs) is None  # certified: not challenged again (a resumed call)


def test_after_the_search_the_challenger_soaks_no_lower_than_its_bar_and_the_outputs_are_written_after():
    """tuner.after_search._certify_challenger, the wiring a live run found broken once: the rival's certification
    gets the best's certified rate × 1.05 as its floor, the line says so, and the study's outputs are written from
    the certifications stored, the rival's among them."""
    from types import SimpleNamespace

    from tuner.after_search import _certify_challenger

    base, best, rival = trial(0, 60.0, baseline=True), trial(1, 70.9, seqs=512), fp8(trial(2, 70.7))
    summary = summarize([base, best, rival])
    study = Attrs()
    study.user_attrs["certifications"] = [cert_of(base, 57.0).to_dict(), cert_of(best, 59.6).to_dict()]
    lines: list[str] = []
    floors: dict[int, float] = {}
    soaked: list[tuple[int, float | None]] = []

    def certify_one(t, first, prior, keep):
        soaked.append((t.number, floors.get(t.number)))  # the floor in place when its soaks run
        return cert_of(t, 66.0)

    written = SimpleNamespace(write=lambda s: certified_summary(summary, stored(s)))
    run = SimpleNamespace(study=study, progress=SimpleNamespace(say=lines.append), outputs=written)
    after = _certify_challenger(run, summary, 30.0, certify_one, floors)
    assert soaked == [(2, challenge_rate(59.6))] and lines == [challenge_line(rival, 1, 59.6)]
    assert after.best.number == 2 and stored(study)[2].certified_rate == 66.0
    soaked.clear()
    assert _certify_challenger(run, after, 30.0, certify_one, floors).best.number == 2 and soaked == []
