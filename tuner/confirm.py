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


def remeasure(contenders: dict[str, ServeConfig], rounds: int,
              measure: Callable[[int, str, ServeConfig], TrialResult],
              progress: Callable[[str], None] = lambda _m: None) -> dict[str, tuple[float, ...]]:
    """Measure every contender ``rounds`` times, round-robin, reversing the order each round so drift hits
    all alike. ``measure(k, name, config)`` runs one fresh trial (k numbers them). Goodput per measurement,
    0 where the SLO held at no load."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    got: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    k = 0
    for i in range(rounds):
        for name in names if i % 2 == 0 else names[::-1]:
            res = measure(k, name, contenders[name])
            k += 1
            got[name].append(res.goodput_req_s if res.slo_met else 0.0)
            progress(f"re-measure round {i + 1}/{rounds}: {name} {got[name][-1]:.3f} req/s"
                     + ("" if res.slo_met else f" ({res.state}: {res.fail_reason})"))
    return {name: tuple(v) for name, v in got.items()}


def confirm(best: TrialResult, rival: TrialResult, rounds: int,
            measure: Callable[[int, ServeConfig], TrialResult],
            progress: Callable[[str], None] = lambda _m: None) -> Confirmation:
    """``measure(k, config)`` runs one fresh trial (k numbers them); alternates who goes first."""
    got = remeasure({f"best (trial {best.number})": best.config, f"rival (trial {rival.number})": rival.config},
                    rounds, lambda k, _name, config: measure(k, config), progress)
    best_g, rival_g = got.values()
    return Confirmation(best.number, rival.number, rival.is_baseline, best_g, rival_g)
