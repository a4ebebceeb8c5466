"""``tune --predict`` (issue #24): predict, then measure. After vLLM's defaults are measured, perfmodel is
calibrated on them, a sample of the search space is budgeted and ranked (and refined one knob around its best:
tuner.search.refine), and only the best predicted configurations are launched (what is left to launch:
tuner.search.predict_queue), one at a time, each refitting the model on every launch of its engine family so
far (tuner.search.predict_fit). Launching stops when no configuration left is predicted to beat the best measured
capacity by more than the model's demonstrated error (median |predicted − measured| of its launches; an error
over TRUSTED_ERROR stops nothing), or at --trials.

A sampled configuration of an engine family the model has not calibrated (speculative decoding, the quantized
variant, an fp8 KV cache) is not predicted: each such family is measured after the top prediction, at vLLM's
defaults with the family's settings (tuner.search.families; with random weights the space holds no speculation:
tuner.search.space). A family the model describes is then calibrated on that launch, and its configurations are
predicted and launched as the defaults' family's are. So is the best
prediction whose rate fills max_num_seqs (Prediction.seq_bound), a regime the model gets wrong both ways (over on
the H200, either way on vLLM-CPU: docs/perfmodel.md), measured once if it beats the best measured capacity, never
stopped on nor refitted on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from perfmodel.family import Family, family_of
from perfmodel.rank import Prediction
from tuner.report.predict_report import measured_rate, prediction_attr, with_prediction
from tuner.search.families import (
    CALIBRATES_ATTR,
    FAMILY_ATTR,
    Calibrations,
    Ranker,
    family_settings,
    modelled,
    ranker,
)
from tuner.search.predict_fit import CALIBRATION_ATTR, Fitted, calibrated, family_launcher, refit, store
from tuner.search.predict_model import Model, sample_space
from tuner.search.predict_queue import Queue, converged
from tuner.search.predict_stop import launch_seconds, no_time, record_stop, sample_fingerprint, stopped_on
from tuner.search.refine import refined
from tuner.search.study import finished, results_of, run_study
from tuner.trial.result import PREDICTED, TrialResult
from tuner.trial.scheduler import Scheduler

if TYPE_CHECKING:
    import optuna

    from launch.config import ServeConfig
    from tuner.search.space import SpaceContext
    from tuner.settings.tune_settings import TuneSettings
    from tuner.trial.time_budget import TimeBudget

PREDICTED_ATTR = PREDICTED  # an enqueued trial's prediction (user attr), kept in its TrialResult.extra
__all__ = [
    "CALIBRATION_ATTR",
    "Queue",
    "converged",
    "guided_search",
    "measured_rate",
    "prediction_attr",
    "run_predicted",
    "with_prediction",
]
Configs = Mapping["ServeConfig", dict[str, Any]]  # the configurations ranked, each with the Optuna params to launch it
Widen = Callable[[Ranker, list[Prediction], Configs], tuple[list[Prediction], Configs]]
RERANK = 24  # after a refit, the best this many left are predicted again (0.5-1 s each on 2 cores)


def _knobs(p: Prediction) -> str:
    return str(p.config.knobs())


def _first_ranking(rank: Ranker, configs: Sequence[ServeConfig], say: Callable[[str], None]) -> list[Prediction]:
    t0 = time.monotonic()
    ranked = rank(configs)
    unseen = [p for p in ranked if p.capacity_req_s is None]
    say(
        f"--predict: {len(configs)} configurations sampled, {len(configs) - len(ranked)} dropped by the KV budget, "
        f"{len(ranked) - len(unseen)} predicted in {time.monotonic() - t0:.0f} s"
        + (f"; {len(unseen)} of engine families not calibrated, not predicted (measured instead)" if unseen else "")
    )
    for i, p in enumerate([p for p in ranked if p.capacity_req_s is not None][:3], 1):
        say(f"--predict: #{i} predicted {p.capacity_req_s:.3f} req/s: {_knobs(p)}")
    return ranked


def guided_search(
    study: optuna.Study,
    total: int,
    run_until: Callable[[int], int],
    model: Model,
    configs: Mapping[ServeConfig, dict[str, Any]],
    say: Callable[[str], None],
    budget: TimeBudget | None = None,
    widen: Widen | None = None,
) -> int:
    """Run the study's trials up to ``total`` as the model directs; ``run_until(n)`` runs trials until the
    study holds ``n`` finished ones (the baseline is enqueued first). ``widen``: a ranking refined (more
    configurations, with their params). Returns how many ran here."""
    ran = run_until(1) if not _baseline(results_of(study)) else 0
    base = _baseline(results_of(study))
    if base is None or measured_rate(base) is None:
        say("--predict: vLLM's defaults measured no capacity to calibrate on; the search goes on unguided")
        return ran + run_until(total)
    sample = sample_fingerprint(configs)
    if why := _nothing_to_rank(study, total, sample):  # a resumed call that certifies, say
        say(f"--predict: {why}")
        return ran
    state = _Search(model, *calibrated(study, model, base), configs, widen, say)
    ranked = _first_ranking(state.rank, list(configs), say)
    if widen is not None:
        ranked, state.configs = widen(state.rank, ranked, state.configs)
    launched = {r.config for r in results_of(study)}
    state.queue = Queue.of(ranked, launched, model.departures).launching(
        family_launcher(model, state.cals, base.config)
    )
    done_predicted = sum(1 for r in results_of(study) if r.predicted and r.predicted.capacity_req_s is not None)
    durations: list[float] = []
    while len(finished(study)) < total:
        best = max((x for r in results_of(study) if (x := measured_rate(r)) is not None), default=None)
        state.queue = state.queue.beating(best)
        stop = converged(best, state.queue.predicted, state.cals.demonstrated_error)
        pick = state.queue.next(done_predicted, stop)
        if pick is None:
            say(f"--predict: no more launches: {stop}")
            record_stop(study, _numbers(study), sample, stop or "nothing left to launch")
            break
        if budget is not None and (why := no_time(budget, durations or launch_seconds(results_of(study)))):
            say(f"--predict: {why}: no new trial starts (resume to continue)")
            break
        _enqueue(study, pick, state.configs)
        say(f"--predict: launching {_what(pick, model.departures(pick.config))}: {_knobs(pick)}")
        t0, before = time.monotonic(), len(finished(study))
        ran += run_until(before + 1)
        durations.append(time.monotonic() - t0)
        state.queue = state.queue.without(pick.config)
        new = max(results_of(study), key=lambda r: r.number)
        if len(finished(study)) == before or new.config != pick.config:
            break  # given up (time budget): the study stays resumable
        done_predicted += int(pick.capacity_req_s is not None)
        state.learn(study, new, trusted=pick.seq_bound is None)
    return ran


@dataclass
class _Search:
    """The guided search's working state: the calibrations, the trials each was fitted on, what is left to launch."""

    model: Model
    cals: Calibrations
    fitted: Fitted
    configs: Configs
    widen: Widen | None
    say: Callable[[str], None]
    queue: Queue = field(default_factory=lambda: Queue((), ()))

    def rank(self, configs: Sequence[ServeConfig]) -> list[Prediction]:
        return ranker(self.model.rank, self.cals)(configs)

    def learn(self, study: optuna.Study, new: TrialResult, trusted: bool) -> None:
        """After a launch: refit (or calibrate its family), store, and predict again what is left."""
        self.cals, line, calibrated_now = refit(self.model, self.cals, self.fitted, new, trusted)
        store(study, self.cals)
        self.say("--predict: " + line)
        if calibrated_now is not None:  # no other calibration moved: its predictions are the only new ones
            self._add_family(calibrated_now, {r.config for r in results_of(study)})
            return
        self.queue = self.queue.reranked(self.rank([p.config for p in self.queue.predicted[:RERANK]]))

    def _add_family(self, family: Family, launched: set[ServeConfig]) -> None:
        """A family calibrated on its first launch: its sampled configurations predicted (and refined) and queued."""
        t0 = time.monotonic()
        ranked = self.rank([c for c in self.configs if family_of(c) == family])
        if self.widen is not None:
            ranked, self.configs = self.widen(self.rank, ranked, self.configs)
        mine = [p for p in ranked if p.capacity_req_s is not None and family_of(p.config) == family]
        # the refinement's neighbours in other calibrated families (its KV dtype changed back, say): predicted too
        others = [p for p in ranked if p.capacity_req_s is not None and family_of(p.config) != family]
        self.queue = self.queue.adding([*mine, *others], launched)
        top = f"; the best {mine[0].capacity_req_s:.3f} req/s: {_knobs(mine[0])}" if mine else ""
        if others:
            top += (f"; {len(others)} one knob away in other families, the best {others[0].capacity_req_s:.3f} "
                    f"req/s: {_knobs(others[0])}")  # fmt: skip
        self.say(f"--predict: {len(mine)} configurations of {family} predicted ({time.monotonic() - t0:.0f} s){top}")


def _enqueue(study: optuna.Study, pick: Prediction, configs: Mapping[ServeConfig, dict[str, Any]]) -> None:
    """``pick`` enqueued with its prediction: by its params, or (a family's first launch: vLLM's defaults with the
    family's settings, tuner.search.families) by those settings; an unpredicted launch that will calibrate its family
    is marked to be measured in full."""
    attrs: dict[str, Any] = {PREDICTED_ATTR: prediction_attr(pick)}
    if pick.config not in configs:
        attrs[FAMILY_ATTR] = family_settings(pick.config)
    if pick.capacity_req_s is None and modelled(family_of(pick.config)):
        attrs[CALIBRATES_ATTR] = True  # not challenged at the best so far: the levels calibrate its family
    study.enqueue_trial(configs.get(pick.config, {}), user_attrs=attrs)


def _nothing_to_rank(study: optuna.Study, total: int, sample: str) -> str | None:
    """Why a call has nothing to rank: the study holds --trials finished trials, or the search stopped itself on
    these very trials and sample (tuner.search.predict_stop)."""
    if len(finished(study)) >= total:
        return f"the study holds {total} finished trials (--trials): nothing to rank or launch"
    if stopped := stopped_on(study, _numbers(study), sample):
        return f"the search stopped on these {len(stopped.trials)} trials before ({stopped.reason}): nothing to rank"
    return None


def _what(pick: Prediction, moved: int) -> str:
    """A launch's prediction as its progress line says it, and how many engine settings it moves from vLLM's."""
    off = f"{moved} engine setting{'s' if moved != 1 else ''} off vLLM's defaults"
    if pick.capacity_req_s is None:
        return f"not predicted ({off}): {pick.unseen}"
    return f"predicted {pick.capacity_req_s:.3f} req/s ({off})" + (f" ({pick.seq_bound})" if pick.seq_bound else "")


def run_predicted(
    study: optuna.Study,
    settings: TuneSettings,
    sctx: SpaceContext,
    model: Model,
    run_one: Callable[[optuna.Trial, str | None], TrialResult],
    after_each: Callable[[optuna.Study], None],
    say: Callable[[str], None],
    scheduler: Scheduler | None = None,
) -> int:
    """``tune --predict``'s search: ``guided_search`` over a sample of the space, one trial at a time on the
    first device (of the run's ``scheduler``), each launched trial's TrialResult carrying its prediction."""
    one_device = (scheduler or Scheduler()).on([settings.device_list()[0]])

    def run_until(n: int) -> int:
        def one(trial: optuna.Trial, dev: str | None) -> TrialResult:
            return with_prediction(run_one(trial, dev), trial.user_attrs)

        return run_study(study, min(n, settings.trials), one, after_each, scheduler=one_device)

    configs = sample_space(sctx, settings.predict_sample, settings.seed)

    def widen(rank: Ranker, ranked: list[Prediction], known: Configs) -> tuple[list[Prediction], Configs]:
        return refined(rank, ranked, known, sctx, say)

    return guided_search(study, settings.trials, run_until, model, configs, say, one_device.rules.budget, widen)


def _numbers(study: optuna.Study) -> list[int]:
    return [t.number for t in finished(study)]


def _baseline(results: Sequence[TrialResult]) -> TrialResult | None:
    return next((r for r in results if r.is_baseline), None)
