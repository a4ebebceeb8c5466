"""What ``tune retune`` found, as one frozen record: the study's stated best before, what was done (the frozen
configuration soaked again, or a new study tuned), the verdict. ``to_dict`` is the JSON ``--json`` prints and
retune-history.jsonl keeps (docs/retune.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from launch.config import ServeConfig
from tuner.certify.headline import uncertified_why
from tuner.certify.verify import Verification

NO_WINNER = "no trial of the re-tune met the SLOs"


class _HeldRate:
    """A stated best's held rate: where a step below it was stated (KV-bound edge, thin margin), what its soaks held."""

    rate: float
    held_rate: float | None

    @property
    def held(self) -> float:
        """The rate its soaks held (tuner.certify.kv_edge, tuner.certify.margin): what a regression compares."""
        return self.held_rate if self.held_rate is not None else self.rate


@dataclass(frozen=True)
class OldBest(_HeldRate):
    """The study's best as best.json stated it."""

    goodput_req_s: float
    rate: float  # certified where a soak certified it, else the search's estimate
    certified: bool
    config: ServeConfig
    fingerprint: str
    versions: Mapping[str, object] | None
    goodput_at_rate_req_s: float | None = None  # stated by a re-verification only: rate × share of good requests
    held_rate: float | None = None  # what its soaks held, where a step below it was stated

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "goodput_req_s": self.goodput_req_s,
            "rate": self.rate,
            "certified": self.certified,
            "config": self.config.to_dict(),
            "fingerprint": self.fingerprint,
            "versions": dict(self.versions) if self.versions is not None else None,
        }
        if self.goodput_at_rate_req_s is not None:
            out["goodput_at_rate_req_s"] = self.goodput_at_rate_req_s
        if self.held_rate is not None:
            out["held_rate"] = self.held_rate
        return out


@dataclass(frozen=True)
class Reverified:
    """Model and stack unchanged: the frozen configuration soaked on a fresh server below its stated rate."""

    check: Verification
    goodput_at_rate_req_s: float  # the soak's rate × its share of requests meeting every SLO

    def to_dict(self) -> dict[str, object]:
        return {**self.check.to_dict(), "goodput_at_rate_req_s": self.goodput_at_rate_req_s}


@dataclass(frozen=True)
class CertifiedCheck:
    """A re-tune's winner checked by its own certification: the rate it certified (None: none certified)."""

    certified_rate_req_s: float | None
    held_unconfirmed: bool = False  # none certified although a soak held: it missed on another fresh server

    @property
    def slo_met(self) -> bool:
        return self.certified_rate_req_s is not None

    def to_dict(self) -> dict[str, object]:
        if self.certified_rate_req_s is None:
            return {"certified_rate_req_s": None, "fail": uncertified_why(self.held_unconfirmed)}
        return {"certified_rate_req_s": self.certified_rate_req_s}


@dataclass(frozen=True)
class RetunedBest(_HeldRate):
    """The re-tune's best and how it was verified before it may replace the frozen files."""

    trial: int
    goodput_req_s: float
    rate: float  # certified, else the search's estimate
    certified: bool
    config: ServeConfig
    check: CertifiedCheck | Verification  # a certification, else one verification soak (--soak-seconds 0)
    held_rate: float | None = None  # what its soaks held, where a step below it was stated


@dataclass(frozen=True)
class Retuned:
    """Model or stack changed: a new study, warm-started from the old best configurations."""

    study: Path
    best: RetunedBest | None  # None: no trial met the SLOs

    @property
    def verified(self) -> bool:
        return self.best is not None and self.best.check.slo_met

    def to_dict(self) -> dict[str, object]:
        b = self.best
        if b is None:
            return {"study": str(self.study), "slo_met": False, "verification": {"slo_met": False, "fail": NO_WINNER}}
        return {
            "study": str(self.study),
            "trial": b.trial,
            "goodput_req_s": b.goodput_req_s,
            "rate": b.rate,
            "certified": b.certified,
            "config": b.config.to_dict(),
            "verification": b.check.to_dict(),
            **({"held_rate": b.held_rate} if b.held_rate is not None else {}),
        }


def retune_regressed(old: OldBest, new: Retuned, tolerance: float) -> bool:
    """No winner, an unverified one, or one whose soaks held more than ``tolerance`` below the old one's: held rates
    compare like with like where a step below one of them was stated (a KV-bound edge or a thin margin)."""
    return new.best is None or not new.verified or new.best.held < old.held * (1 - tolerance)


@dataclass(frozen=True)
class RetuneResult:
    """One ``tune retune``: ``regression`` decides the exit code (1)."""

    study: Path
    model_changed: bool
    changes: Mapping[str, tuple[object, object]]  # compared version: (old, new)
    tolerance: float
    old: OldBest
    new: Reverified | Retuned
    regression: bool
    launch_sh_updated: bool

    @property
    def action(self) -> str:
        return "reverified" if isinstance(self.new, Reverified) else "retuned"

    @property
    def versions_changed(self) -> bool:
        return bool(self.changes)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "study": str(self.study),
            "model_changed": self.model_changed,
            "versions_changed": self.versions_changed,
            "changes": {k: {"old": o, "new": n} for k, (o, n) in self.changes.items()},
            "tolerance": self.tolerance,
            "old": self.old.to_dict(),
            "action": self.action,
        }
        # the keys' order as the JSON has always had it: a re-tune with a best states the update before it
        if isinstance(self.new, Retuned) and self.new.best is not None:
            return {
                **out,
                "launch_sh_updated": self.launch_sh_updated,
                "new": self.new.to_dict(),
                "regression": self.regression,
            }
        return {
            **out,
            "new": self.new.to_dict(),
            "regression": self.regression,
            "launch_sh_updated": self.launch_sh_updated,
        }
