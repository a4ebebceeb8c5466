"""Summary: what a study found so far, from its trial results: the best configuration (judged on the mean
of its repeated measurements of capacity, the highest rate that kept every SLO), vLLM's defaults, the
nearest misses and the gain over the defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from launch.config import ServeConfig
from tuner.certify.certification import Certification
from tuner.trial.result import TrialResult, TrialState


@dataclass(frozen=True)
class Summary:
    """What the study found so far.

    Configurations are ranked on capacity (``TrialResult.capacity_req_s``), the figure the headline states.
    A configuration the sampler proposed more than once was measured more than once; it is judged on the
    mean of its measurements (0 where one kept no rate), not on its luckiest one: on the 2-core CPU
    machine repeats of one configuration differed by up to 22 %. ``best`` is then that configuration's
    measurement nearest the mean."""

    best: TrialResult | None
    baseline: TrialResult | None
    closest: tuple[TrialResult, ...]  # when nothing met the SLO: nearest misses first
    top: tuple[TrialResult, ...]  # the best configs that met the SLO, one trial each, best first (warm starts)
    gain_over_baseline: float | None  # mean capacity of the best config / of vLLM's defaults − 1
    baseline_note: str
    best_capacities: tuple[float, ...] = ()  # every measurement of the best's configuration, in trial order
    baseline_capacities: tuple[float, ...] = ()
    measurements: tuple[TrialResult, ...] = ()  # every completed trial (each configuration's measurements)
    overruled: TrialResult | None = None  # the search's best, when vLLM's defaults certified a higher rate

    @property
    def best_capacity(self) -> float | None:
        return _mean(self.best_capacities) if self.best_capacities else None

    def best_capacity_text(self) -> str:
        """'43.879 req/s', or with repeats '39.938 req/s (mean of 2 measurements: 43.879, 35.997)'."""
        if self.best_capacity is None:
            return "n/a"
        text = f"{self.best_capacity:.3f} req/s"
        if len(self.best_capacities) > 1:
            text += (
                f" (mean of {len(self.best_capacities)} measurements: "
                + ", ".join(f"{g:.3f}" for g in self.best_capacities)
                + ")"
            )
        return text

    @property
    def best_goodputs(self) -> tuple[float, ...]:
        """The goodput of each measurement of the best's configuration (0 where no rate held): data beside
        the capacity, not what ranks."""
        if self.best is None:
            return ()
        same = sorted((r for r in self.measurements if r.config == self.best.config), key=lambda r: r.number)
        return tuple(r.goodput_req_s if r.slo_met else 0.0 for r in same)


def _mean(values: tuple[float, ...]) -> float:
    return sum(values) / len(values)


def by_config(results: list[TrialResult]) -> dict[ServeConfig, list[TrialResult]]:
    """Completed trials grouped by configuration, in trial order."""
    groups: dict[ServeConfig, list[TrialResult]] = {}
    for r in sorted(results, key=lambda r: r.number):
        if r.state == TrialState.COMPLETE:
            groups.setdefault(r.config, []).append(r)
    return groups


def summarize(results: list[TrialResult]) -> Summary:
    groups = by_config(results)
    ranked = []  # (mean capacity, the measurement nearest it, every measurement) per config that met the SLO
    for trials in groups.values():
        met = [r for r in trials if r.slo_met]
        if met:
            capacities = tuple(r.capacity_req_s for r in trials)
            mean = _mean(capacities)
            nearest = min(met, key=lambda r: (abs(r.capacity_req_s - mean), -r.number))
            ranked.append((mean, nearest, capacities))
    ranked.sort(key=lambda x: (-x[0], x[1].ttft_p95_ms or 0.0))
    best_mean, best, best_capacities = ranked[0] if ranked else (0.0, None, ())
    baseline = next((r for r in results if r.is_baseline), None)
    baseline_capacities = tuple(r.capacity_req_s for r in groups.get(baseline.config, [])) if baseline else ()
    unmet = (r for r in results if r.state == TrialState.COMPLETE and not r.slo_met)
    closest = tuple(sorted(unmet, key=lambda r: r.constraint)[:3]) if best is None else ()
    gain, note = None, "no baseline trial yet"
    if baseline is not None:
        base_mean = _mean(baseline_capacities) if baseline_capacities else 0.0
        if baseline.state != TrialState.COMPLETE:
            note = f"vLLM's defaults did not run: {baseline.state} ({baseline.fail_reason})"
        elif base_mean <= 0:
            note = "vLLM's defaults met the SLO at no tested load"
        elif best is not None:
            gain = best_mean / base_mean - 1.0
            note = f"vLLM's defaults: {base_mean:.3f} req/s"
            if len(baseline_capacities) > 1:
                note += f" (mean of {len(baseline_capacities)} measurements)"
    top = tuple(r for _mean, r, _g in ranked[:3])
    measured = tuple(r for trials in groups.values() for r in trials)
    return Summary(best, baseline, closest, top, gain, note, best_capacities, baseline_capacities, measured)


def certified_summary(summary: Summary, certifications: Mapping[int, Certification]) -> Summary:
    """The summary with the certifications' verdict: the configuration that certified the highest rate (of the
    best's soak length) is the best, and launch.sh runs it; where that is not the search's best (or the best
    certified none), the search's winner is kept as ``overruled``. Without --certify each the contenders are the
    best and vLLM's defaults."""
    best = summary.best
    mine = certifications.get(best.number) if best is not None else None
    if best is None or mine is None:
        return summary
    rivals = [
        (c.certified_rate, c.trial)
        for c in certifications.values()
        if c.trial != best.number and c.certified_rate is not None and c.soak_s == mine.soak_s
    ]
    if not rivals:
        return summary
    top_rate, top_number = max(rivals, key=lambda x: (x[0], -x[1]))
    if mine.certified_rate is not None and mine.certified_rate >= top_rate:
        return summary
    winner = next((r for r in summary.measurements if r.number == top_number), None)
    if winner is None:  # a certification of a trial the results no longer hold
        return summary
    same = tuple(r.capacity_req_s for r in summary.measurements if r.config == winner.config)
    top = (winner, *(t for t in summary.top if t.number != winner.number))
    is_base = summary.baseline is not None and winner.number == summary.baseline.number
    base_mean = _mean(summary.baseline_capacities) if summary.baseline_capacities else 0.0
    return replace(
        summary,
        best=winner,
        best_capacities=same,
        gain_over_baseline=None if is_base or base_mean <= 0 else _mean(same) / base_mean - 1.0,
        top=top,
        overruled=best,
    )
