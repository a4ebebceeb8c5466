"""The challenger: a configuration the search measured above the best's certified rate but never certified.

Why: the best is chosen on the search's short levels, and certified by soaks that can come out far below them at a
KV-bound edge (run h's winner: 70.877 estimated, 59.595 stated), while a configuration with twice its KV cache, whose
levels read as high (70.678), was never soaked. Stating the winner as the highest load the machine allows then rests
on its short levels alone. So where ``--certify all`` (the default) leaves such a configuration, the one with the
highest estimate is certified too, from its estimate down to the rate it must hold to win by more than a measurement
repeats (REPEATABILITY), and wins where it certifies more (tuner.certify.summary.certified_summary).
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


__all__ = ["challenge_rate", "challenger"]
