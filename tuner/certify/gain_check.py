"""Whether a certified gain over vLLM's defaults holds on the same hour: the best soaked beside the defaults' miss.

The best is certified first and vLLM's defaults after it, from the rate to beat (certified.rate_to_beat). On a host
whose speed drifts (vLLM-CPU: twice as fast from one hour to another), a miss of the defaults an hour after the best
held can be the host's, not the configuration's. So where the defaults certified below the best, the best soaks once
more, on a fresh server right after the defaults' certification, at the highest rate the defaults missed above every
rate they held and at or below the best's certified rate, with that soak's prompts and arrivals. Held: the best beat
the defaults there within minutes. Missed: the gain is not shown. Where no such miss is (the defaults held that rate
on some server, or never tried it), nothing shows that the best beats them either (docs/certification.md, "The gain,
soaked beside the defaults").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tuner.certify.soak_record import Soak

if TYPE_CHECKING:
    from tuner.certify.certification import Certification  # which carries the best's GainCheck

RATE_TOLERANCE = 1e-9  # a defaults' soak at the rate to beat counts as at the best's certified rate


@dataclass(frozen=True)
class Beside:
    """Where the best soaks beside the defaults: the defaults' missed soak it repeats."""

    rate_req_s: float
    attempt: int  # that soak's index in the defaults' certification: its prompts and arrivals (tuner.certify.soak)


@dataclass(frozen=True)
class GainCheck:
    """The best's soak beside the defaults' miss, and the defaults' certification it was set against."""

    baseline_trial: int
    against_req_s: float  # the defaults' certified rate when the check ran
    soak: Soak
    same_call: bool = True  # run straight after the defaults' certification, in the tune call that made it

    @property
    def shown(self) -> bool | None:
        """Held beside the defaults' certification: shown; missed: not; held in a later call: not checked beside."""
        if not self.soak.holds:
            return False
        return True if self.same_call else None

    def applies_to(self, baseline: Certification | None, where: Beside) -> bool:
        """It was set against this certification of the defaults, at ``where`` (a later one needs its own check)."""
        return (
            baseline is not None
            and baseline.trial == self.baseline_trial
            and baseline.certified_rate is not None
            and _same(baseline.certified_rate, self.against_req_s)
            and _same(where.rate_req_s, self.soak.rate)
        )

    def phrase(self) -> str:
        rate = f"{self.soak.rate:.3f} req/s"
        if self.soak.holds and not self.same_call:
            return (
                f"the best held {rate} again on a fresh server, but in a later tune call than the defaults' "
                "certification: not checked beside them"
            )
        if self.soak.holds:
            return f"beside them: the best held {rate} again, on a fresh server after the defaults missed it there"
        why = "; ".join(self.soak.reasons) or "missed"
        return (
            f"but beside them the best missed {rate} too, on a fresh server after the defaults missed it there "
            f"({why}): that it beats them is not shown (the host may have slowed since the best certified)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline_trial": self.baseline_trial,
            "against_req_s": self.against_req_s,
            "same_call": self.same_call,
            "soak": self.soak.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GainCheck:
        same = bool(d.get("same_call", False))  # unrecorded: not known to be beside them
        return cls(int(d["baseline_trial"]), float(d["against_req_s"]), Soak.from_dict(d["soak"]), same)


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= RATE_TOLERANCE * max(1.0, abs(b))


def claimed(best: Certification | None, baseline: Certification | None) -> bool:
    """Both certified, the best above the defaults: a certified gain is claimed."""
    b = best.certified_rate if best is not None else None
    d = baseline.certified_rate if baseline is not None else None
    return b is not None and d is not None and b > d


def beside(best: Certification | None, baseline: Certification | None) -> Beside | None:
    """Where the best soaks beside the defaults: the highest rate the defaults missed (judged, not a window too
    short) at or below the best's certified rate and above every rate they held on any server; None where no gain
    is claimed or no such miss is (``held_up_to``)."""
    if best is None or baseline is None or not claimed(best, baseline):
        return None
    top = (best.certified_rate or 0.0) * (1 + RATE_TOLERANCE)
    low = held_up_to(best, baseline) * (1 + RATE_TOLERANCE)
    misses = [
        Beside(s.rate, i)
        for i, s in enumerate(baseline.soaks)
        if not s.holds and not s.unjudged and low < s.rate <= top
    ]
    return max(misses, key=lambda m: m.rate_req_s, default=None)


def held_up_to(best: Certification, baseline: Certification) -> float:
    """The highest rate the defaults held on any fresh server, up to the best's certified rate: a rate they held
    once and missed on another server does not show that the best beats them there."""
    top = (best.certified_rate or 0.0) * (1 + RATE_TOLERANCE)
    return max((s.rate for s in baseline.soaks if s.holds and s.rate <= top), default=baseline.certified_rate or 0.0)


def pending(best: Certification | None, baseline: Certification | None) -> Beside | None:
    """The soak beside the defaults still to run: where one is due (``beside``) and no stored check applies."""
    where = beside(best, baseline)
    if where is None or best is None or (best.gain_check is not None and best.gain_check.applies_to(baseline, where)):
        return None
    return where


@dataclass(frozen=True)
class GainVerdict:
    """What shows a certified gain: the soak beside the defaults (``check``), or why none can (``unshown``); neither:
    the soak is due and has not run (yet)."""

    check: GainCheck | None = None
    unshown: str | None = None

    @property
    def shown(self) -> bool | None:
        """Shown where the best held beside the defaults' miss; None: not checked yet."""
        if self.unshown is not None:
            return False
        return self.check.shown if self.check is not None else None

    def phrase(self) -> str:
        if self.unshown is not None:
            return self.unshown
        return self.check.phrase() if self.check is not None else "not yet soaked beside them"


def verdict(best: Certification, baseline: Certification) -> GainVerdict | None:
    """What shows the gain of ``best`` over ``baseline``, both certified (None: no gain claimed)."""
    if not claimed(best, baseline):
        return None
    where = beside(best, baseline)
    if where is None:
        return GainVerdict(unshown=_unshown(best, baseline))
    if best.gain_check is not None and best.gain_check.applies_to(baseline, where):
        return GainVerdict(check=best.gain_check)
    return GainVerdict()


def _unshown(best: Certification, baseline: Certification) -> str:
    """Why a certified gain is not shown: the defaults missed no rate above what they held, up to the best's."""
    held, rate = held_up_to(best, baseline), best.certified_rate or 0.0
    if _same(held, rate):
        why = f"but vLLM's defaults held the best's {rate:.3f} req/s on a fresh server too"
    else:
        why = f"but vLLM's defaults missed no rate between the {held:.3f} req/s they held and the best's {rate:.3f}"
    return f"{why}: that it beats them is not shown"
