"""A running study's output files, rewritten from the study after each trial and after each step that
follows the search (--confirm, certification, the sample answer): what the study holds decides them all,
so a resumed or interrupted run writes the same files (tuner.report.outputs writes them)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import optuna

from launch import script as launch_script
from launch.config import ServeConfig
from launch.machine import MeasuredOn
from tuner.certify.certified import stored as stored_certifications
from tuner.certify.confirm_store import STUDY_ATTR, current_confirmation, with_confirmations
from tuner.certify.headline import CONFIRMED, Headline, headline
from tuner.certify.spec_rule import apply_rule
from tuner.certify.summary import Summary, certified_summary, summarize
from tuner.inputs import Inputs
from tuner.report.outputs import write_outputs
from tuner.report.report_html import write_report
from tuner.report.sample_answer import STUDY_ATTR as SAMPLE_ATTR
from tuner.search.predict_spare import STUDY_ATTR as SPARE_ATTR
from tuner.search.predict_spare import current_spare
from tuner.search.progress import Progress
from tuner.search.study import results_of, timelines_of
from tuner.trial.kv_pin import pin_note, pinned
from tuner.trial.result import TrialResult


class StudyOutputs:
    """Writes launch.sh, best.json, trials.csv and report.html of ``inp``'s study; keeps the best capacity
    as of the last trial (a trial's probe is judged hopeless against it: tuner.trial.measuring)."""

    def __init__(
        self, inp: Inputs, meta: dict[str, Any], fingerprint: str, nice: int, progress: Progress, study: optuna.Study
    ) -> None:
        self.inp, self.meta, self.fingerprint, self.nice, self.progress = inp, meta, fingerprint, nice, progress
        self.best_capacity: float | None = summarize(results_of(study)).best_capacity
        self.spare: dict[str, Any] | None = None  # the spare speed the files being written state (launch.sh's too)

    def after_trial(self, study: optuna.Study) -> None:
        summary = self.write(study)
        self.best_capacity = summary.best_capacity
        self.progress.trial_done(study, summary)

    def write(self, study: optuna.Study) -> Summary:
        """Every output file from what ``study`` holds now; the summary they state."""
        results = results_of(study)
        certs = stored_certifications(study)
        summary = certified_summary(summarize(results), certs)
        confirmation = current_confirmation(stored_runs(study), summary)
        state_gain = headline(summary, certs, confirmation).basis == CONFIRMED
        meta, _ = with_confirmations(self.meta, stored_runs(study), summary, state_gain=state_gain)
        if SAMPLE_ATTR in study.user_attrs:
            meta = {**meta, "sample_answer": study.user_attrs[SAMPLE_ATTR]}
        ruled, _ = apply_rule(summary, results, certs)  # the best every file states (write_outputs rules the same)
        self.spare = current_spare(study.user_attrs.get(SPARE_ATTR), ruled.best, certs)
        if self.spare is not None:
            meta = {**meta, "spare_speed": self.spare}

        def report(path: Path, results: list[TrialResult], summary: Summary, m: dict[str, Any], **kw: Any) -> None:
            write_report(path, results, summary, m, importances(study), **kw)

        out = self.inp.out
        return write_outputs(
            out, results, meta, self._script, report, timelines_of(study), certs, confirmation, deploy=self.deployed
        )

    def deployed(self, r: TrialResult) -> ServeConfig:
        """What launch.sh starts and best.json's ``deployed`` states: the trial's config, its KV cache pinned."""
        return pinned(r.config, r.readback, self.inp.spec, self.inp.gpu.is_cpu)

    def _script(self, path: Path, best: TrialResult, head: Headline) -> None:
        config = self.deployed(best)
        note = launch_note(best, head, self.inp.settings.slo, self.inp.workload.name)
        if self.spare is not None:
            note += f"\n{self.spare['line']}"
        if (pin := pin_note(best.config, config, best.readback)) is not None:
            note += "\n" + pin
        launch_script.write_launch_script(
            path,
            config,
            self.inp.vllm,
            fingerprint=self.fingerprint,
            model_dir=best.config.model,
            note=note,
            nice=self.nice,
            measured=self.measured_on(best),
        )

    def measured_on(self, best: TrialResult) -> MeasuredOn | None:
        """The machine the study measured on (its recorded versions), the GPU whose memory it emulated, the pace of
        ``best``'s server there (launch.pace) and the spare speed stated with its rate."""
        emulated = self.inp.gpu.name if self.inp.actual_gpu is not None else None
        measured = MeasuredOn.from_versions(self.meta.get("versions") or {}, emulated)
        spare = self.spare.get("spare") if self.spare is not None else None
        return measured.with_pace(best.pace_ms).with_spare(spare) if measured is not None else None


def launch_note(best: TrialResult, head: Headline, slo: str, workload: str) -> str:
    """launch.sh's header: what was measured, and the capacity it keeps (the study's headline)."""
    return f"slotune: trial {best.number}, {slo}, workload {workload}\ncapacity: {head.rate_text()}"


def stored_runs(study: optuna.Study) -> list[dict[str, Any]]:
    """The study's --confirm runs (tuner.certify.confirm_store.stored_run), oldest first."""
    return list(study.user_attrs.get(STUDY_ATTR, []))


def importances(study: optuna.Study) -> dict[str, float]:
    """Each knob's importance to goodput (PED-ANOVA) over the completed trials; none below four."""
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE and t.params]
    if len(done) < 4:
        return {}
    try:
        with warnings.catch_warnings():  # "few trials in a regime": the estimate is rough, the chart says so
            warnings.simplefilter("ignore")
            ev = optuna.importance.PedAnovaImportanceEvaluator()
            return dict(optuna.importance.get_param_importances(study, evaluator=ev))
    except (ValueError, RuntimeError):  # too few distinct values for an estimate: the report says none
        return {}
