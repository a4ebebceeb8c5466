"""A soak refused on its window alone (SLOs met, arrivals under four request lifetimes) is told as unjudged, and
the certification says which --soak-seconds would let such a soak run its five lifetimes."""

from __future__ import annotations

from dataclasses import replace

from tests.tuner.certify_fakes import soak
from tuner.certify.certification import Certification
from tuner.certify.soak import window_hint
from tuner.certify.soak_record import Soak

WINDOW = "arrivals lasted 119 s, 3.9 mean request lifetimes (30.2 s each), fewer than 4: ..."


def short(rate: float, server: int = 1) -> Soak:
    return replace(soak(rate, False), reasons=(WINDOW,), lifetimes=3.9, lifetime_s=30.2, server=server)


def test_a_soak_missed_on_its_window_alone_is_unjudged():
    assert short(2.2).unjudged
    assert not replace(short(2.2), reasons=("whole soak missed ttft_p95", WINDOW)).unjudged  # the SLO missed too
    assert not replace(soak(2.2, True), lifetimes=3.9).unjudged
    assert not replace(short(2.2), lifetimes=None).unjudged  # stored before the lifetimes were kept
    assert not replace(short(2.2), lifetimes=4.5).unjudged  # long enough: another check failed


def test_the_lifetimes_are_stored_and_read_back():
    s = short(2.2)
    assert Soak.from_dict(s.to_dict()) == s
    old = {k: v for k, v in s.to_dict().items() if k not in ("lifetimes", "lifetime_s")}
    assert Soak.from_dict(old).lifetimes is None and not Soak.from_dict(old).unjudged


def test_an_unjudged_soak_above_the_certified_rate_names_the_soak_length_that_judges_it():
    soaks = (replace(soak(2.2, True), server=0), replace(soak(1.9, True), server=0), short(2.2), soak(1.9, True))
    cert = Certification(1, 2.5, 60.0, tuple(replace(s, server=1) if i == 3 else s for i, s in enumerate(soaks)))
    assert cert.certified_rate == 1.9
    hint = window_hint(cert)
    assert hint is not None
    assert "a soak at 2.200 req/s ended unjudged" in hint and "lifetimes of 30.2 s" in hint
    assert "a 60-s soak runs at most 120 s" in hint and "--soak-seconds 76 or more" in hint  # 5 × 30.2 / 2


def test_no_hint_when_nothing_above_the_certified_rate_was_unjudged():
    held = Certification(1, 2.5, 60.0, (replace(soak(2.2, True), server=0), replace(soak(2.2, True), server=1)))
    assert window_hint(held) is None
    retried = (short(1.5, server=0), replace(soak(1.5, True), server=0))  # cleared by a retry on its server
    below = Certification(1, 2.5, 60.0, (*retried, *held.soaks))
    assert below.certified_rate == 2.2 and window_hint(below) is None
