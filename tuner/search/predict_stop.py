"""A ``tune --predict`` search that stopped itself (tuner.search.predict_queue.converged) stays stopped: the study
keeps why, on which trials and which sample, and a resumed call with the same trials and sample (one that only
certifies, say) does not rank the sample again to find the same answer (26-37 s a call on the H200's host:
results/h200-llama-3-8b-a30-predict-2026-12-03-e). A new trial, or another sample, ranks again."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

    from launch.config import ServeConfig

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
