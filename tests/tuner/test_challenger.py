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
