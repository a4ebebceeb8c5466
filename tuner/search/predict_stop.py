"""A ``tune --predict`` search that stopped itself (tuner.search.predict_queue.converged) stays stopped: the study
keeps why, on which trials and which sample, and a resumed call with the same trials and sample (one that only
certifies, say) does not rank the sample again to find the same answer (26-37 s a call on the H200's host:
results/h200-llama-3-8b-a30-predict-2026-12-03-e). A new trial, or another sample, ranks again. And a launch that
the time budget would cut does not start (``no_time``)."""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

    from launch.config import ServeConfig
    from tuner.trial.result import TrialResult
    from tuner.trial.time_budget import TimeBudget

STOPPED_ATTR = "perfmodel_stopped"  # the study's Stopped.to_dict, once the search stopped itself


def sample_fingerprint(configs: Iterable[ServeConfig]) -> str:
    """The sampled configurations, order aside (a sample drawn again from the same seed gives the same one)."""
    knobs = sorted(repr(sorted(c.knobs().items())) for c in configs)
    return hashlib.sha256("\n".join(knobs).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Stopped:
    """Why the search stopped, the finished trials it had then, and the sample it had ranked."""

    trials: tuple[int, ...]
    sample: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"trials": list(self.trials), "sample": self.sample, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Stopped:
        return cls(tuple(int(t) for t in d["trials"]), str(d["sample"]), str(d["reason"]))


def record_stop(study: optuna.Study, trials: Iterable[int], sample: str, reason: str) -> None:
    study.set_user_attr(STOPPED_ATTR, Stopped(tuple(sorted(trials)), sample, reason).to_dict())


def stopped_on(study: optuna.Study, trials: Iterable[int], sample: str) -> Stopped | None:
    """The stop the study recorded on exactly these finished trials and this sample, or None."""
    stored = study.user_attrs.get(STOPPED_ATTR)
    if not stored:
        return None
    stop = Stopped.from_dict(stored)
    return stop if stop.trials == tuple(sorted(trials)) and stop.sample == sample else None


def no_time(budget: TimeBudget, launches: Sequence[float]) -> str | None:
    """Why a launch starting now would not finish inside the time budget, or None. ``launches``: how long this
    run's launches took (a server's start and its measurement), else the study's launched trials (a resumed call:
    the defaults' launch, say). A launch that cannot finish would only start a server for the budget's gate to stop
    unmeasured (tuner.trial.time_budget), so none starts when a typical launch, or a typical measurement of this run,
    no longer fits in what is left."""
    left = budget.left()
    if launches and (typical := statistics.median(launches)) > left:
        return f"time budget nearly spent ({max(left, 0.0):.0f} s left, a launch takes {typical:.0f} s here)"
    if budget.overrun() is not None:
        return f"time budget nearly spent ({max(left, 0.0):.0f} s left, less than a measurement takes here)"
    return None


def launch_seconds(results: Sequence[TrialResult]) -> list[float]:
    """Each launched trial's start-to-stop time from its timeline (trials an older slotune stored have none)."""
    out = []
    for r in results:
        t = r.timeline or {}
        began, ended = t.get("launched"), t.get("stopped")
        if isinstance(began, int | float) and isinstance(ended, int | float) and ended > began:
            out.append(float(ended - began))
    return out
