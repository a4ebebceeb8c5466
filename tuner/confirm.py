"""``tune --confirm N``: re-measure the winner against its strongest rival with fresh servers.

One capacity search per configuration is one noisy sample, and the best of many noisy samples is biased
upwards (the winner's curse). After the search, the best configuration and its rival — vLLM's defaults,
or the runner-up when the defaults won — are each measured N more times, alternating which goes first so
that drift hits both alike. Only these fresh measurements enter the means; the gain on the means is what
the report states beside the search's own figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from launch.config import ServeConfig
from tuner.outputs import Summary
from tuner.trial_result import TrialResult


@dataclass(frozen=True)
class Confirmation:
    best_trial: int
    rival_trial: int
    rival_is_baseline: bool
    best_goodput: tuple[float, ...]  # req/s per fresh measurement; 0 where the SLO held at no load
    rival_goodput: tuple[float, ...]

    @staticmethod
    def _mean(values: tuple[float, ...]) -> float:
        return sum(values) / len(values)

    @property
    def best_mean(self) -> float:
        return self._mean(self.best_goodput)

    @property
    def rival_mean(self) -> float:
        return self._mean(self.rival_goodput)

    @property
    def gain_on_means(self) -> float | None:
        return self.best_mean / self.rival_mean - 1.0 if self.rival_mean > 0 else None

    @property
    def rival_name(self) -> str:
        return "vLLM's defaults" if self.rival_is_baseline else "the runner-up"

    def line(self) -> str:
        def spread(v: tuple[float, ...]) -> str:
            return f"{self._mean(v):.3f} req/s (min {min(v):.3f}, max {max(v):.3f}, n={len(v)})"

        gain = "n/a" if self.gain_on_means is None else f"{self.gain_on_means * 100:+.0f}%"
        return (f"Confirmed with fresh servers: best (trial {self.best_trial}) {spread(self.best_goodput)}; "
                f"{self.rival_name} (trial {self.rival_trial}) {spread(self.rival_goodput)}; "
                f"gain on the means {gain}")

    def to_dict(self) -> dict[str, Any]:
        return {"best_trial": self.best_trial, "rival_trial": self.rival_trial,
                "rival_is_baseline": self.rival_is_baseline, "best_goodput_req_s": list(self.best_goodput),
                "rival_goodput_req_s": list(self.rival_goodput), "best_mean_req_s": self.best_mean,
                "rival_mean_req_s": self.rival_mean, "gain_on_means": self.gain_on_means}


def rival_of(summary: Summary) -> TrialResult | None:
    """Whom the best is confirmed against: the defaults (if they ran), else the runner-up that met the SLO."""
    best = summary.best
    if best is None:
        return None
    if not best.is_baseline and summary.baseline is not None and summary.baseline.state == "COMPLETE":
        return summary.baseline
    others = [r for r in summary.top if r.number != best.number]
    return others[0] if others else None


def confirm(best: TrialResult, rival: TrialResult, rounds: int,
            measure: Callable[[int, ServeConfig], TrialResult],
            progress: Callable[[str], None] = lambda _m: None) -> Confirmation:
    """``measure(k, config)`` runs one fresh trial (k numbers them); alternates who goes first."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    got: dict[str, list[float]] = {"best": [], "rival": []}
    k = 0
    for i in range(rounds):
        order = (("best", best), ("rival", rival)) if i % 2 == 0 else (("rival", rival), ("best", best))
        for who, trial in order:
            res = measure(k, trial.config)
            k += 1
            got[who].append(res.goodput_req_s if res.slo_met else 0.0)
            progress(f"confirm round {i + 1}/{rounds}: {who} (trial {trial.number}) "
                     f"{got[who][-1]:.3f} req/s" + ("" if res.slo_met else f" ({res.state}: {res.fail_reason})"))
    return Confirmation(best.number, rival.number, rival.is_baseline, tuple(got["best"]), tuple(got["rival"]))
