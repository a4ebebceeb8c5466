"""How much slower than the certifying machine a machine may be before the stated rate tips: the study's calibrated
performance model serves the certified configuration at its stated rate, over the soak's window, for a few draws,
on steps 5 %, 10 %, ... slower (perfmodel.costs.Costs.slowed).

Why: fresh machines of one card type differ. At run h's KV-bound edge the same two draws held on one H100 and
tipped on another whose steps ran 12-17 % slower a token, and the model, on steps 10 % slower, gave the tipped draws'
preemptions (results/gpu-run-h-seeds-again-2026-12-07, results/perfmodel-kv-edge-draws-2026-12-07). A soak on one
machine cannot see that margin; the model can, in seconds. Past the tip its TTFT is too low, so a draw counts as
tipped on its preemptions as well as on its SLOs.

The study's own lowest miss above the stated rate bounds it from measurement: on a machine every step of which is f
times as long, the stated rate r runs as r x f runs on this one, stretched by f (the same queue, with the SLO's
milliseconds f times tighter), so a rate m that missed here misses at r on any machine m / r times slower. The
stated figure is the model's, capped there.

The model is first set to the speed the soaks measured (perfmodel.anchor): its step costs scaled until its mean
TPOT at the soaks' rate is theirs (the stated rate's held soaks; where the stated rate is a step below the held one
and was not soaked, the held rate's). A calibration from short levels can be off by tens of per cent at the edge
(H200 run b's made its winner's steps 30 % too long); the slowdowns are then counted from the machine that measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perfmodel.config import EngineConfig
    from perfmodel.costs import Costs
    from perfmodel.traffic import Demand

SLOWDOWNS = (1.0, 1.05, 1.1, 1.15, 1.2, 1.3)
DRAWS = 4
# a draw that preempted more of its requests than this has tipped: run h's draws that missed preempted 1.6-3.8 %,
# those that held at its rate 0.25 % at most (one held at 1.10 x its rate with 1.18 %: the line errs low)
TIPPED_PREEMPTED = 0.01
STUDY_ATTR = "spare_speed"


@dataclass(frozen=True)
class SlowedDraws:
    """The draws on steps ``factor`` times as long: how many held (met the SLOs without tipping), the most a draw
    preempted."""

    factor: float
    held: int
    draws: int
    preemptions_max: int

    def to_dict(self) -> dict[str, Any]:
        return {"factor": self.factor, "held": self.held, "draws": self.draws, "preemptions_max": self.preemptions_max}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SlowedDraws:
        return cls(float(d["factor"]), int(d["held"]), int(d["draws"]), int(d["preemptions_max"]))


@dataclass(frozen=True)
class SpareSpeed:
    """The stated rate of ``trial`` on machines slower by each factor, by the model calibrated on ``calibrated_on``."""

    trial: int
    rate_req_s: float
    window_s: float
    calibrated_on: tuple[int, ...]
    slowed: tuple[SlowedDraws, ...]
    # how far the model's capacity of this trial, predicted before its launch, was off the rate its soaks held; None
    # where it was not predicted (vLLM's defaults, a family's first launch: the model was fitted on it)
    predicted_error_vs_held: float | None = None
    missed_above_req_s: float | None = None  # the study's lowest miss above the stated rate (tuner.certify.edge)
    measured_tpot_ms: float | None = None  # the held soaks' mean TPOT; None: no soak gave one
    # the factor on the calibration's steps that gives that TPOT, the slowdowns' 1.0; None: not anchored (no TPOT
    # given, or, with one, no factor from 0.5 to 2 reaches it: then nothing is stated)
    anchor: float | None = None
    measured_at_req_s: float | None = None  # the rate those soaks held (None: the stated rate)

    @property
    def unanchorable(self) -> bool:
        """A measured TPOT the model cannot be set to: no figure."""
        return self.measured_tpot_ms is not None and self.anchor is None

    @property
    def modelled(self) -> float | None:
        """The largest slowdown at which every draw held, every smaller one holding too; None: not even at 1.0."""
        last = None
        for s in self.slowed:
            if s.held < s.draws:
                break
            last = s.factor
        return last

    @property
    def bound(self) -> float | None:
        """The slowdown at which the study's lowest miss above says the stated rate misses; None: nothing missed."""
        return self.missed_above_req_s / self.rate_req_s if self.missed_above_req_s else None

    @property
    def capped(self) -> bool:
        return self.modelled is not None and self.bound is not None and self.modelled >= self.bound

    @property
    def spare(self) -> float | None:
        """The figure stated: the model's; where the measured bound is at or under it, the model's last step under the
        bound (at the bound the rate misses; just inside it, at that miss's edge, draws flip: docs/certification.md)."""
        bound = self.bound
        if not self.capped or bound is None:
            return self.modelled
        return max((s.factor for s in self.slowed if s.factor < bound), default=1.0)

    @property
    def tips_at(self) -> SlowedDraws | None:
        """The first slowdown at which a draw tipped; None: none did up to the slowest tried."""
        return next((s for s in self.slowed if s.held < s.draws), None)

    def line(self) -> str:
        trials = ", ".join(str(t) for t in self.calibrated_on)
        err = self.predicted_error_vs_held
        trust = (
            f"its capacity predicted {100 * err:+.1f} % off the rate held"
            if err is not None
            else "not predicted before its launch"
        )
        at = self.measured_at_req_s
        soaks = "its soaks" if at is None or abs(at - self.rate_req_s) < 1e-9 else f"its soaks at {at:.3f} req/s"
        speed = (
            f" and set to the speed of {soaks}: steps x{self.anchor:.2f} the calibration's, for their mean TPOT of "
            f"{self.measured_tpot_ms:.1f} ms"
            if self.anchor is not None and self.measured_tpot_ms is not None
            else (
                ", not set to a measured speed (no soak that held gave a TPOT)" if self.measured_tpot_ms is None else ""
            )
        )
        head = (
            f"spare speed of trial {self.trial} (the performance model, calibrated on trials {trials}{speed}; "
            f"{trust}): {self.rate_req_s:.3f} req/s over {self.window_s:.0f}-s windows"
        )
        if self.unanchorable:
            return (
                f"{head}: not stated, no speed from half to twice its calibration's gives the model the soaks' mean "
                f"TPOT of {self.measured_tpot_ms:.1f} ms: the model does not describe this edge"
            )
        tip, spare, n = self.tips_at, self.modelled, self.slowed[0].draws
        if self.capped and self.bound is not None and self.missed_above_req_s is not None:
            stated = self.spare or 1.0
            machines = (
                "no slower than the one that measured it" if stated == 1.0 else f"at most about {_pct(stated)} slower"
            )
            return (
                f"{head} held {n} of {n} draws on steps up to {_pct(spare or 1.0)} slower, but a rate "
                f"{_pct(self.bound, 1)} higher, {self.missed_above_req_s:.3f} req/s, missed here, and a machine that "
                f"much slower serves the stated rate as this one served that: a figure for machines {machines} (the "
                f"model's last step under that {_pct(self.bound, 1)})"
            )
        if tip is None:
            return f"{head} held {n} of {n} draws on steps up to {_pct(self.slowed[-1].factor)} slower"
        tipped = f"{tip.draws - tip.held} of {n} draws tipped (up to {tip.preemptions_max:,} preemptions a draw)"
        if spare is None:  # the model does not reproduce the soaks that held: it says nothing of slower machines
            return (
                f"{head}: not stated, {tipped} at the speed that certified it, where the soaks held: the model does "
                "not describe this edge"
            )
        if spare == 1.0:
            return (
                f"{head} held {n} of {n} draws at the speed that certified it; {_pct(tip.factor)} slower, {tipped}: "
                "a figure for machines no slower than the one that measured it"
            )
        return (
            f"{head} held {n} of {n} draws on steps up to {_pct(spare)} slower; {_pct(tip.factor)} slower, "
            f"{tipped}: a figure for machines at most about {_pct(spare)} slower than the one that measured it"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "rate_req_s": self.rate_req_s,
            "window_s": self.window_s,
            "calibrated_on": list(self.calibrated_on),
            "slowed": [s.to_dict() for s in self.slowed],
            "predicted_error_vs_held": self.predicted_error_vs_held,
            "missed_above_req_s": self.missed_above_req_s,
            "measured_tpot_ms": self.measured_tpot_ms,
            "anchor": self.anchor,
            "measured_at_req_s": self.measured_at_req_s,
            "modelled": self.modelled,
            "spare": self.spare,
            "line": self.line(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SpareSpeed:
        slowed = tuple(SlowedDraws.from_dict(s) for s in d["slowed"])
        calibrated = tuple(int(t) for t in d["calibrated_on"])
        err, miss = d.get("predicted_error_vs_held"), d.get("missed_above_req_s")
        rate, window = float(d["rate_req_s"]), float(d["window_s"])
        return cls(
            int(d["trial"]),
            rate,
            window,
            calibrated,
            slowed,
            _opt(err),
            _opt(miss),
            _opt(d.get("measured_tpot_ms")),
            _opt(d.get("anchor")),
            _opt(d.get("measured_at_req_s")),
        )


def _opt(v: Any) -> float | None:
    return None if v is None else float(v)


def _pct(factor: float, digits: int = 0) -> str:
    return f"{100 * (factor - 1):.{digits}f} %"


def spare_speed(
    trial: int,
    rate: float,
    window_s: float,
    engine: EngineConfig,
    costs: Costs,
    demand: Demand,
    calibrated_on: tuple[int, ...],
    predicted_error_vs_held: float | None = None,
    missed_above_req_s: float | None = None,
    measured_tpot_ms: float | None = None,
    measured_at_req_s: float | None = None,
    draws: int = DRAWS,
    factors: tuple[float, ...] = SLOWDOWNS,
) -> SpareSpeed:
    """``rate`` for ``window_s`` on ``engine``, ``draws`` seeded draws (seeds 1, 2, ...) at each slowdown of
    ``costs``, slowest last; once every draw tips, slower machines are not tried. With ``measured_tpot_ms`` the
    slowdowns count from the speed at which two draws at ``measured_at_req_s`` (default ``rate``) give that mean
    TPOT."""
    from perfmodel.anchor import anchor_speed
    from perfmodel.server import Server

    count = max(1, round(rate * window_s))
    loads = [demand.open_level(rate, count, seed) for seed in range(1, draws + 1)]
    known = (trial, rate, window_s, calibrated_on)
    then = (predicted_error_vs_held, missed_above_req_s, measured_tpot_ms)
    anchor = None
    if measured_tpot_ms is not None:
        at = measured_at_req_s or rate  # at the stated rate, its first two draws
        anchoring = loads[:2] if at == rate else [demand.open_level(at, round(at * window_s), s) for s in (1, 2)]
        anchor = anchor_speed(engine, costs, anchoring, measured_tpot_ms)
        if anchor is None:
            return SpareSpeed(*known, (), *then, None, measured_at_req_s)
    slowed: list[SlowedDraws] = []
    for factor in factors:
        steps = costs.slowed(factor * (anchor or 1.0))
        outs = [Server(engine, steps).run(load, demand.slos) for load in loads]
        held = sum(o.slo_met(demand.slos) and o.preemptions <= TIPPED_PREEMPTED * count for o in outs)
        slowed.append(SlowedDraws(factor, held, draws, max(o.preemptions for o in outs)))
        if held == 0:
            break
    found = tuple(slowed)
    return SpareSpeed(*known, found, *then, anchor, measured_at_req_s)
