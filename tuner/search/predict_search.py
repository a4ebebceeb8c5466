"""``tune --predict`` (issue #24): predict, then measure. After vLLM's defaults are measured, perfmodel is
calibrated on them, a sample of the search space is budgeted and ranked (and refined one knob around its best:
tuner.search.refine), and only the best predicted configurations are launched (what is left to launch:
tuner.search.predict_queue), one at a time, each refitting the model on every launch of the defaults' engine
family so far. Launching stops when no configuration left is predicted to beat the best measured capacity by more
than the model's demonstrated error (median |predicted − measured| of its launches; an error over TRUSTED_ERROR
stops nothing), or at --trials.

A sampled configuration of an engine family the model has not calibrated (speculative decoding, the quantized
variant, an fp8 KV cache) is not predicted: the first of each such family is measured after the top prediction,
as any trial (with random weights the space holds no speculation: tuner.search.space). So is the best
prediction whose rate fills max_num_seqs (Prediction.seq_bound): an upper bound the model overrates, measured
once if it beats the best measured capacity, never stopped on nor refitted on.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from perfmodel.family import family_of
from perfmodel.rank import Calibration, Check, Prediction
from tuner.report.predict_report import measured_rate, prediction_attr, with_prediction
from tuner.search.predict_model import Model, sample_space
from tuner.search.predict_queue import TRUSTED_ERROR, Queue, converged
from tuner.search.predict_stop import record_stop, sample_fingerprint, stopped_on
from tuner.search.refine import refined
from tuner.search.study import finished, results_of, run_study
from tuner.trial.result import PREDICTED, TrialResult, TrialState
from tuner.trial.scheduler import Scheduler

if TYPE_CHECKING:
    import optuna

    from launch.config import ServeConfig
    from tuner.search.space import SpaceContext
    from tuner.settings.tune_settings import TuneSettings
    from tuner.trial.time_budget import TimeBudget

PREDICTED_ATTR = PREDICTED  # an enqueued trial's prediction (user attr), kept in its TrialResult.extra
__all__ = [
    "Queue",
    "converged",
    "guided_search",
    "measured_rate",
    "prediction_attr",
    "run_predicted",
    "with_prediction",
]
CALIBRATION_ATTR = "perfmodel_calibration"  # the study's latest calibration (Calibration.to_dict)
Configs = Mapping["ServeConfig", dict[str, Any]]  # the configurations ranked, each with the Optuna params to launch it
Widen = Callable[[Calibration, list[Prediction], Configs], tuple[list[Prediction], Configs]]
RERANK = 24  # after a refit, the best this many left are predicted again (0.5-1 s each on 2 cores)


def _knobs(p: Prediction) -> str:
    return str(p.config.knobs())


def _first_ranking(
    model: Model, cal: Calibration, configs: Sequence[ServeConfig], say: Callable[[str], None]
) -> list[Prediction]:
    t0 = time.monotonic()
    ranked = model.rank(configs, cal)
    unseen = [p for p in ranked if p.capacity_req_s is None]
    say(
        f"--predict: {len(configs)} configurations sampled, {len(configs) - len(ranked)} dropped by the KV budget, "
        f"{len(ranked) - len(unseen)} predicted in {time.monotonic() - t0:.0f} s"
        + (f"; {len(unseen)} of engine families not calibrated, not predicted (measured instead)" if unseen else "")
    )
    for i, p in enumerate([p for p in ranked if p.capacity_req_s is not None][:3], 1):
        say(f"--predict: #{i} predicted {p.capacity_req_s:.3f} req/s: {_knobs(p)}")
    return ranked


def _refit(
    model: Model, cal: Calibration, measured: list[TrialResult], new: TrialResult, trusted: bool = True
) -> tuple[Calibration, str]:
    """After a launch of the calibrated family: its check (predicted before, measured after) and the refit.
    An untrusted prediction (its rate filled max_num_seqs) is neither checked nor refitted on: the model's steps
    do not describe that regime, and its demonstrated error is the trusted predictions'."""
    pred = new.predicted.capacity_req_s if new.predicted else None
    rate = measured_rate(new)
    if family_of(new.launched or new.config) != cal.family or new.state != TrialState.COMPLETE:
        what = f"{rate:.3f} req/s measured" if rate else (new.fail_reason or "no capacity measured")
        return cal, f"trial {new.number}: {new.state}, {what} (not refitted on)"
    if not trusted:
        error = f", predicted {pred:.3f} ({100 * (pred / rate - 1):+.1f} %)" if pred and rate else ""
        return cal, f"trial {new.number}: measured {rate or 0:.3f} req/s{error}; it fills max_num_seqs: not refitted on"
    measured.append(new)
    checks = (Check(new.number, pred, rate),) if pred is not None and rate else ()
    cal = model.calibrate(measured, cal.checked(*checks))
    err = cal.demonstrated_error
    line = f"trial {new.number}: measured {rate or 0:.3f} req/s"
    if checks:
        line += f", predicted {pred:.3f} ({100 * checks[0].rel_error:+.1f} %)"
    if err is not None:
        line += f"; demonstrated error now {100 * err:.1f} %"
        if err > TRUSTED_ERROR:
            line += f" (over {100 * TRUSTED_ERROR:.0f} %: not trusted to stop the search)"
    return cal, line + "; refitted"


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
    study holds ``n`` finished ones (the baseline is enqueued first). ``widen``: the first ranking refined (more
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
    cal, measured = _calibrated(study, model, base)
    launched = {r.config for r in results_of(study)}
    ranked = _first_ranking(model, cal, list(configs), say)
    if widen is not None:
        ranked, configs = widen(cal, ranked, configs)
    queue = Queue.of(ranked, launched, model.departures)
    done_predicted = sum(1 for r in results_of(study) if r.predicted and r.predicted.capacity_req_s is not None)
    durations: list[float] = []
    while len(finished(study)) < total:
        best = max((x for r in results_of(study) if (x := measured_rate(r)) is not None), default=None)
        queue = queue.beating(best)
        stop = converged(best, queue.predicted, cal.demonstrated_error)
        pick = queue.next(done_predicted, stop)
        if pick is None:
            say(f"--predict: no more launches: {stop}")
            record_stop(study, _numbers(study), sample, stop or "nothing left to launch")
            break
        if budget is not None and (why := _no_time(budget, durations or launch_seconds(results_of(study)))):
            say(f"--predict: {why}: no new trial starts (resume to continue)")
            break
        study.enqueue_trial(configs[pick.config], user_attrs={PREDICTED_ATTR: prediction_attr(pick)})
        say(f"--predict: launching {_what(pick, model.departures(pick.config))}: {_knobs(pick)}")
        t0, before = time.monotonic(), len(finished(study))
        ran += run_until(before + 1)
        durations.append(time.monotonic() - t0)
        queue = queue.without(pick.config)
        new = max(results_of(study), key=lambda r: r.number)
        if len(finished(study)) == before or new.config != pick.config:
            break  # given up (time budget): the study stays resumable
        done_predicted += int(pick.capacity_req_s is not None)
        cal, line = _refit(model, cal, measured, new, trusted=pick.seq_bound is None)
        study.set_user_attr(CALIBRATION_ATTR, cal.to_dict())
        say("--predict: " + line)
        queue = queue.reranked(model.rank([p.config for p in queue.predicted[:RERANK]], cal))
    return ran


def _nothing_to_rank(study: optuna.Study, total: int, sample: str) -> str | None:
    """Why a call has nothing to rank: the study holds --trials finished trials, or the search stopped itself on
    these very trials and sample (tuner.search.predict_stop)."""
    if len(finished(study)) >= total:
        return f"the study holds {total} finished trials (--trials): nothing to rank or launch"
    if stopped := stopped_on(study, _numbers(study), sample):
        return f"the search stopped on these {len(stopped.trials)} trials before ({stopped.reason}): nothing to rank"
    return None


def _calibrated(study: optuna.Study, model: Model, base: TrialResult) -> tuple[Calibration, list[TrialResult]]:
    """The study's calibration (stored by an earlier call, else fitted on the defaults, and stored) and the trials it
    was fitted on, the defaults first."""
    stored = study.user_attrs.get(CALIBRATION_ATTR)
    cal = Calibration.from_dict(stored) if stored else model.calibrate([base], None)
    study.set_user_attr(CALIBRATION_ATTR, cal.to_dict())
    return cal, [base, *(r for r in results_of(study) if r.number in cal.trials and r.number != base.number)]


def _what(pick: Prediction, moved: int) -> str:
    """A launch's prediction as its progress line says it, and how many engine settings it moves from vLLM's."""
    off = f"{moved} engine setting{'s' if moved != 1 else ''} off vLLM's defaults"
    if pick.capacity_req_s is None:
        return f"not predicted ({off}): {pick.unseen}"
    return f"predicted {pick.capacity_req_s:.3f} req/s ({off})" + (f" ({pick.seq_bound})" if pick.seq_bound else "")


def _no_time(budget: TimeBudget, launches: Sequence[float]) -> str | None:
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

    def widen(cal: Calibration, ranked: list[Prediction], known: Configs) -> tuple[list[Prediction], Configs]:
        return refined(model, cal, ranked, known, sctx, say)

    return guided_search(study, settings.trials, run_until, model, configs, say, one_device.rules.budget, widen)


def _numbers(study: optuna.Study) -> list[int]:
    return [t.number for t in finished(study)]


def _baseline(results: Sequence[TrialResult]) -> TrialResult | None:
    return next((r for r in results if r.is_baseline), None)
