"""``tune --confirm N``: re-measure the winner against its strongest rival with fresh servers.

One capacity search per configuration is one noisy sample, and the best of many noisy samples is biased
upwards (the winner's curse). After the search, the best configuration and its rival — vLLM's defaults,
or the runner-up when the defaults won — are each measured N more times, alternating which goes first so
that drift hits both alike. Each measurement is a capacity (the highest rate that kept every SLO), the figure
the study ranks and states. On a host with several GPUs (``--devices``) the two are measured at once, on
different GPUs, swapping GPUs each round (the run's scheduler, tuner.trial.scheduler). Only these fresh
measurements enter the means; the gain on the means is what the report states beside the search's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from launch.config import ServeConfig
from tuner.certify.summary import Summary
from tuner.trial.result import TrialResult, TrialState
from tuner.trial.scheduler import Scheduler

CAPACITY, GOODPUT = "capacity", "goodput"  # what a stored run measured: goodput in runs before capacity ranked
CONFIRM_TRIAL_BASE = 9000  # above any search trial's number (a study runs tens of trials)


def confirm_trial_number(k: int) -> int:
    """The trial number of the ``k``-th re-measurement: apart from every search trial's, so that its log
    directory (``trial-9000`` on) and its load seeds (``tuner.trial.measuring.level_seed``) are its own."""
    return CONFIRM_TRIAL_BASE + k


@dataclass(frozen=True)
class Confirmation:
    best_trial: int
    rival_trial: int
    rival_is_baseline: bool
    best_req_s: tuple[float, ...]  # the measure per fresh measurement (req/s); 0 where no rate held
    rival_req_s: tuple[float, ...]
    measure: str = CAPACITY  # CAPACITY, or GOODPUT in studies confirmed before capacity ranked
    calls: int = 1  # how many --confirm calls (tune runs of a resumed study) measured these
    # the GPU of each measurement (None: the default device; empty: not recorded, runs before 2026-11-30)
    best_devices: tuple[str | None, ...] = ()
    rival_devices: tuple[str | None, ...] = ()

    @staticmethod
    def _mean(values: tuple[float, ...]) -> float:
        return sum(values) / len(values)

    @property
    def best_mean(self) -> float:
        return self._mean(self.best_req_s)

    @property
    def rival_mean(self) -> float:
        return self._mean(self.rival_req_s)

    @property
    def gain_on_means(self) -> float | None:
        return self.best_mean / self.rival_mean - 1.0 if self.rival_mean > 0 else None

    @property
    def rival_name(self) -> str:
        return "vLLM's defaults" if self.rival_is_baseline else "the runner-up"

    def line(self, gain: bool = True) -> str:
        """The re-measurements; with ``gain``, the gain on the means too (only where it is the study's headline
        gain, tuner.certify.headline: a certified gain supersedes it)."""

        def spread(v: tuple[float, ...]) -> str:
            return f"{self._mean(v):.3f} req/s (min {min(v):.3f}, max {max(v):.3f}, n={len(v)})"

        on_means = "n/a" if self.gain_on_means is None else f"{self.gain_on_means * 100:+.0f}%"
        calls = f" ({self.calls} --confirm runs)" if self.calls > 1 else ""
        return (
            f"Confirmed with fresh servers{calls}, {self.measure}: best (trial {self.best_trial}) "
            f"{spread(self.best_req_s)}; {self.rival_name} (trial {self.rival_trial}) {spread(self.rival_req_s)}"
            + (f"; gain on the means {on_means}" if gain else "")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "best_trial": self.best_trial,
            "rival_trial": self.rival_trial,
            "rival_is_baseline": self.rival_is_baseline,
            "measure": self.measure,
            f"best_{self.measure}_req_s": list(self.best_req_s),
            f"rival_{self.measure}_req_s": list(self.rival_req_s),
            "best_mean_req_s": self.best_mean,
            "rival_mean_req_s": self.rival_mean,
            "gain_on_means": self.gain_on_means,
            "calls": self.calls,
            "best_devices": list(self.best_devices),
            "rival_devices": list(self.rival_devices),
        }


def rival_of(summary: Summary) -> TrialResult | None:
    """Whom the best is confirmed against: the defaults (if they ran), else the runner-up that met the SLO."""
    best = summary.best
    if best is None:
        return None
    if not best.is_baseline and summary.baseline is not None and summary.baseline.state == TrialState.COMPLETE:
        return summary.baseline
    others = [r for r in summary.top if r.number != best.number]
    return others[0] if others else None


def remeasure(
    contenders: dict[str, ServeConfig],
    rounds: int,
    measure: Callable[[int, str, ServeConfig, str | None], TrialResult],
    progress: Callable[[str], None] = lambda _m: None,
    devices: Sequence[str | None] = (None,),
    done: int = 0,
    scheduler: Scheduler | None = None,
) -> dict[str, tuple[tuple[float, str | None], ...]]:
    """Measure every contender ``rounds`` times, round-robin, reversing the order each round so drift hits
    all alike. ``measure(k, name, config, device)`` runs one fresh trial (k numbers them). Per measurement
    the capacity (0 where no rate held) and the device it ran on. ``done`` rounds ran before (an
    earlier call): the order goes on from there instead of starting again.

    With several ``devices`` (GPUs of one host) a round's contenders are measured at once (by ``scheduler``),
    the i-th of the round's order on the i-th device: reversing the order each round also swaps the GPUs,
    so with two contenders on two GPUs each is measured on each GPU in every pair of rounds."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if not devices:
        raise ValueError("devices must name at least one device (None: the default one)")
    run_at_once = (scheduler or Scheduler()).all_at_once
    got: dict[str, list[tuple[float, str | None]]] = {name: [] for name in contenders}
    names = list(contenders)
    k = 0
    for i in range(done, done + rounds):
        order = names if i % 2 == 0 else names[::-1]
        for start in range(0, len(order), len(devices)):
            chunk = order[start : start + len(devices)]  # the last may be shorter than the device list
            batch = [(k + j, name, devices[j]) for j, name in enumerate(chunk)]
            k += len(batch)
            results = run_at_once([functools.partial(measure, kk, n, contenders[n], d) for kk, n, d in batch])
            for (_, name, device), res in zip(batch, results, strict=True):
                got[name].append((res.capacity_req_s, device))
                where = "" if device is None else f" on device {device}"
                progress(
                    f"re-measure round {i + 1}/{done + rounds}: {name}{where} {got[name][-1][0]:.3f} req/s"
                    + ("" if res.slo_met else f" ({res.state}: {res.fail_reason})")
                )
    return {name: tuple(v) for name, v in got.items()}


def confirm(
    best: TrialResult,
    rival: TrialResult,
    rounds: int,
    measure: Callable[[int, ServeConfig, str | None], TrialResult],
    progress: Callable[[str], None] = lambda _m: None,
    devices: Sequence[str | None] = (None,),
    done: int = 0,
    scheduler: Scheduler | None = None,
) -> Confirmation:
    """``measure(k, config, device)`` runs one fresh trial (k numbers them); alternates who goes first (and,
    with two devices, who runs on which), going on after ``done`` rounds of earlier calls."""
    got = remeasure(
        {f"best (trial {best.number})": best.config, f"rival (trial {rival.number})": rival.config},
        rounds,
        lambda k, _name, config, device: measure(k, config, device),
        progress,
        devices,
        done,
        scheduler,
    )
    best_m, rival_m = got.values()
    return Confirmation(
        best.number,
        rival.number,
        rival.is_baseline,
        tuple(g for g, _ in best_m),
        tuple(g for g, _ in rival_m),
        best_devices=tuple(d for _, d in best_m),
        rival_devices=tuple(d for _, d in rival_m),
    )
