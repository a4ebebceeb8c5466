"""The challenger: a configuration the search measured above the best's certified rate but never certified.

The best is chosen on the search's short levels, and its soaks can come out far below them at a KV-bound edge while
a configuration whose levels read as high (twice the KV cache, say) is never soaked. So where ``--certify all`` leaves
such a configuration, the one with the highest estimate is certified too, down to the rate it must hold to win by more
than a measurement repeats (REPEATABILITY), and wins where it certifies more (tuner.certify.summary.certified_summary;
docs/certification.md, "A challenger is certified too").
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import fmean

from tuner.certify.certification import Certification
from tuner.certify.spec_rule import speculates
from tuner.certify.summary import Summary
from tuner.search.predict_queue import REPEATABILITY
from tuner.trial.result import TrialResult


def challenge_rate(best_certified_req_s: float) -> float:
    """What a challenger must hold to beat the best: its certified rate and a measurement's repeatability."""
    return best_certified_req_s * (1.0 + REPEATABILITY)


def challenger(summary: Summary, certs: Mapping[int, Certification]) -> TrialResult | None:
    """The configuration, never certified, whose mean search estimate is the highest above ``challenge_rate`` of the
    best's certified rate; None where there is none. The best's and vLLM's defaults' configurations are not
    challengers (both are certified), nor a speculating one (its twin rule compares it: tuner.certify.spec_rule)."""
    best, base = summary.best, summary.baseline
    mine = certs.get(best.number) if best is not None else None
    if best is None or mine is None or mine.certified_rate is None:
        return None
    certified = {r.config for r in summary.measurements if r.number in certs}
    taken = {best.config, *(() if base is None else (base.config,)), *certified}
    by_config: dict[object, list[TrialResult]] = {}
    for r in summary.measurements:
        if r.config not in taken and not speculates(r):
            by_config.setdefault(r.config, []).append(r)
    bar = challenge_rate(mine.certified_rate)
    # a configuration is judged on the mean of its measurements, 0 where one kept no rate (as Summary ranks)
    means = [(fmean(r.capacity_req_s for r in runs), runs) for runs in by_config.values()]
    above = [(m, runs) for m, runs in means if m > bar and any(r.slo_met for r in runs)]
    if not above:
        return None
    _mean, runs = max(above, key=lambda x: (x[0], -x[1][0].number))
    return max(runs, key=lambda r: (r.capacity_req_s, -r.number))


def challenge_line(rival: TrialResult, best: int, best_certified_req_s: float) -> str:
    """The console's line before a challenger's certification: why it is soaked, and how low it may step."""
    bar = challenge_rate(best_certified_req_s)
    return (
        f"trial {rival.number} measured {rival.capacity_req_s:.3f} req/s in the search, above the certified "
        f"{best_certified_req_s:.3f} of trial {best}, and was never soaked: certified too, from its estimate down to "
        f"{bar:.3f} ({100 * REPEATABILITY:.0f} % more: what it must hold to win)"
    )


__all__ = ["challenge_line", "challenge_rate", "challenger"]
